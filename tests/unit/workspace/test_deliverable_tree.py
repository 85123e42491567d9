"""build_deliverable on a real workspace tree: names, exports, what is copied and what is not."""

from __future__ import annotations

from pathlib import Path

from atom_agent.sandbox import Limits, SubprocessRunner
from atom_agent.state import Plan, PlanStep
from atom_agent.workspace import Workspace
from atom_agent.workspace.deliverable import build_deliverable


def _plan_step(step_id: str, title: str, depends_on: list[str] | None = None) -> PlanStep:
    return PlanStep(
        id=step_id, title=title, description="-", acceptance_criteria=["works"],
        depends_on=depends_on or [], defines=["x"],
    )  # fmt: skip


def _commit(ws: Workspace, run, step_id: str, files: dict[str, str], deps=()):  # type: ignore[no-untyped-def]
    step = ws.create_step(run, step_id, depends_on=deps)
    attempt = ws.new_attempt(step)
    for name, text in files.items():
        (attempt.staging / name).parent.mkdir(parents=True, exist_ok=True)
        (attempt.staging / name).write_text(text)
    ws.commit(step, attempt)


def test_one_function_task_names_package_and_module_after_it(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    task = "Write a Python function is_palindrome(s) that ignores case, with pytest tests."
    run = ws.create_run("r", task=task)
    _commit(ws, run, "step1", {
        "impl.py": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
                   "    return t == t[::-1]\n",
        "test.py": "from impl import is_palindrome\n\n\ndef test_p():\n"
                   "    assert is_palindrome('A a')\n",
    })  # fmt: skip
    plan = Plan(steps=[_plan_step("step1", task)])
    summary = build_deliverable(
        ws, run, plan, {"step1": "committed"}, task=task,
        runner=SubprocessRunner(), limits=Limits(timeout_s=60),
    )  # fmt: skip
    assert summary is not None
    assert summary["package"] == "is_palindrome"
    assert summary["modules"] == {"step1": "is_palindrome.palindrome"}
    root = Path(summary["path"])
    init = (root / "is_palindrome" / "__init__.py").read_text()
    assert "from is_palindrome.palindrome import is_palindrome" in init
    assert summary["tests"]["ok"] and summary["tests"]["passed"] == 1
    assert not list(root.rglob("__pycache__"))  # the sandbox run leaves nothing behind


def test_helpers_data_files_and_failed_steps(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    task = "An LRU cache"
    run = ws.create_run("r", task=task)
    _commit(ws, run, "core", {
        "impl.py": "from helpers import clamp\n\n\nclass LRUCache:\n    pass\n",
        "helpers.py": "def clamp(x):\n    return x\n",
        "data/sample.txt": "x",
        "test_core.py": "from impl import LRUCache\nfrom helpers import clamp\n",
    })  # fmt: skip
    _commit(ws, run, "stats", {"impl.py": "def stats():\n    return 1\n"}, deps=["core"])
    plan = Plan(
        steps=[_plan_step("core", "LRU cache core"), _plan_step("stats", "Stats", ["core"])]
    )
    summary = build_deliverable(ws, run, plan, {"core": "committed", "stats": "failed"}, task=task)
    assert summary is not None
    assert summary["package"] == "lru_cache"
    assert summary["modules"] == {"core": "lru_cache.lru_cache_core"}  # no failed step
    root = Path(summary["path"])
    module = (root / "lru_cache" / "lru_cache_core.py").read_text()
    assert module.startswith("from lru_cache.helpers import clamp\n")
    assert (
        (root / "tests" / "test_lru_cache_core_core.py")
        .read_text()
        .startswith(
            "from lru_cache.lru_cache_core import LRUCache\nfrom lru_cache.helpers import clamp\n"
        )
    )
    assert any("data/sample.txt is not a top-level Python file" in n for n in summary["notes"])
    assert summary["tests"] is None  # no runner given


def test_nothing_committed_means_no_result(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    run = ws.create_run("r", task="t")
    plan = Plan(steps=[_plan_step("a", "A")])
    assert build_deliverable(ws, run, plan, {"a": "failed"}, task="t") is None
    assert not (run.path / "result").exists()
