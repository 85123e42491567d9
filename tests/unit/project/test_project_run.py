"""A run on a project end to end, scripted model, real git and sandbox: branch, gate, hand-back."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from atom_agent import Context, run_task
from atom_agent.nodes.project.planner import task_test_command
from atom_agent.testing import ScriptedChatModel

MODULE = '''\
"""A tiny calculator."""

LIMIT = 10


def add(a, b):
    """The sum of a and b.

    >>> add(2, 3)
    5
    """
    raise NotImplementedError


def mul(a, b):
    """The product of a and b.

    >>> mul(2, 3)
    6
    >>> mul(-1, 4)
    -4
    """
    raise NotImplementedError


def double(x):
    """Twice x."""
    return x * 2
'''

TESTS = """\
from calc import double


def test_double():
    assert double(4) == 8
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _project(root: Path, *, git: bool = True) -> Path:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text(MODULE)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TESTS)
    if git:
        _git(root, "init", "-q", "-b", "main")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
    return root


def _answers(**defs: str) -> ScriptedChatModel:
    """A model that answers an edit request for `name` with defs[name]."""

    def respond(messages: list[BaseMessage]) -> str:
        text = str(messages[-1].content)
        for name, source in defs.items():
            if f"definition of `{name}`" in text:
                return "```python\n" + textwrap.dedent(source) + "```"
        return "no idea"

    return ScriptedChatModel(respond=respond)


def _ctx(tmp_path: Path, repo: Path, **kw: object) -> Context:
    return Context(workspace=str(tmp_path / "ws"), repo=str(repo), sandbox_timeout_s=60,
                   max_attempts=2, **kw)  # type: ignore[arg-type]  # fmt: skip


GOOD_ADD = '''
def add(a, b):
    """The sum of a and b."""
    return a + b
'''
GOOD_MUL = '''
def mul(a, b):
    """The product of a and b."""
    return a * b
'''


def test_two_steps_commit_on_the_runs_branch_and_the_project_is_untouched(tmp_path: Path) -> None:
    repo = _project(tmp_path / "proj")
    before = (repo / "calc" / "__init__.py").read_text()
    model = _answers(add=GOOD_ADD, mul=GOOD_MUL)
    outcome = run_task("Implement `calc.add` and `calc.mul` as their docstrings say.",
                       _ctx(tmp_path, repo), models=model)  # fmt: skip
    assert outcome.status == "done", outcome.reason
    branch = f"atom/{outcome.run_id}"
    # Two commits on the run's branch, one per step, in the user's repository.
    log = _git(repo, "log", "--format=%s", f"main..{branch}").splitlines()
    assert log == ["atom: mul in calc/__init__.py", "atom: add in calc/__init__.py"]
    # The user's branch and working tree are as they were.
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert _git(repo, "status", "--porcelain") == ""
    assert (repo / "calc" / "__init__.py").read_text() == before
    changed = _git(repo, "show", f"{branch}:calc/__init__.py")
    assert "return a + b" in changed and "return a * b" in changed
    run = json.loads((tmp_path / "ws" / "runs" / outcome.run_id / "run.json").read_text())
    assert run["project"]["branch"] == branch
    baseline = json.loads((tmp_path / "ws" / "runs" / outcome.run_id / "baseline.json").read_text())
    assert "tests/test_calc.py::test_double" in baseline["suite"]["ids"]["passed"]
    deliverable = run["deliverable"]
    assert deliverable["tests_before"] == {"passed": 1, "failed": 0}
    assert deliverable["tests"]["ok"] and deliverable["tests"]["passed"] == 1
    report = Path(outcome.report or "").read_text()
    assert branch in report and "calc/__init__.py" in report
    # The docstring examples were the steps' checks, and they ran.
    step = tmp_path / "ws" / "runs" / outcome.run_id / "steps" / "2-mul"
    verdict = json.loads((step / "attempts" / "1" / "verdict.json").read_text())
    assert verdict["verified"] and len(verdict["checks"]["results"]) == 2


def test_a_change_that_breaks_a_passing_test_is_not_committed(tmp_path: Path) -> None:
    repo = _project(tmp_path / "proj")
    broken = '''
    def double(x):
        """Twice x, and strings too."""
        return str(x) * 2
    '''
    outcome = run_task("Change `calc.double` so that it also doubles strings.",
                       _ctx(tmp_path, repo), models=_answers(double=broken))  # fmt: skip
    assert outcome.status == "failed"
    branch = f"atom/{outcome.run_id}"
    assert _git(repo, "log", "--format=%s", f"main..{branch}") == ""
    verdict = json.loads(
        (
            tmp_path
            / "ws"
            / "runs"
            / outcome.run_id
            / "steps"
            / "1-double"
            / "attempts"
            / "2"
            / "verdict.json"
        ).read_text()  # fmt: skip
    )
    assert verdict["suite"]["regressions"] == ["tests/test_calc.py::test_double"]
    assert "passed before your change and fails now" in verdict["feedback"]


def test_a_folder_without_git_gets_a_copy_and_a_patch(tmp_path: Path) -> None:
    repo = _project(tmp_path / "plain", git=False)
    outcome = run_task("Implement `calc.add` as its docstring says.",
                       _ctx(tmp_path, repo), models=_answers(add=GOOD_ADD))  # fmt: skip
    assert outcome.status == "done", outcome.reason
    assert not (repo / ".git").exists()
    patch = tmp_path / "ws" / "runs" / outcome.run_id / "result" / "project.patch"
    assert outcome.result == str(patch.parent)
    assert "+    return a + b" in patch.read_text()
    target = tmp_path / "apply"
    _project(target, git=True)
    _git(target, "apply", str(patch))
    assert "return a + b" in (target / "calc" / "__init__.py").read_text()


def test_a_workspace_inside_the_project_is_refused(tmp_path: Path) -> None:
    repo = _project(tmp_path / "proj")
    ctx = Context(workspace=str(repo / "ws"), repo=str(repo))
    with pytest.raises(Exception, match="inside the project"):
        run_task("Implement `calc.add`.", ctx, models=_answers())


def test_names_the_task_gives_as_context_are_not_changed(tmp_path: Path) -> None:
    repo = _project(tmp_path / "proj")
    outcome = run_task("Implement `calc.add` as its docstring says; `calc.double` shows the style.",
                       _ctx(tmp_path, repo), models=_answers(add=GOOD_ADD))  # fmt: skip
    plan = json.loads((tmp_path / "ws" / "runs" / outcome.run_id / "plan.json").read_text())
    steps = plan["revisions"][-1]["plan"]["steps"]
    assert [s["target"] for s in steps] == ["calc/__init__.py::add"]


@pytest.mark.parametrize(
    ("task", "command"),
    [
        (
            "run the tests with `python -m pytest -W ignore::X tests`.",
            "python -m pytest -W ignore::X tests",
        ),
        ("Tests: `PYTHONPATH=src pytest -q t`", "PYTHONPATH=src pytest -q t"),
        ("use `pytest` fixtures", ""),
        ("no command here", ""),
    ],
)
def test_a_test_command_the_task_spells_out_is_used(task: str, command: str) -> None:
    assert task_test_command(task) == command
