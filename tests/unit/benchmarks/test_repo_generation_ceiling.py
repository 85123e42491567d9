"""benchmarks/repo_generation_ceiling.py: the agent's edit request sampled and oracle-repaired."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from langchain_core.messages import BaseMessage

from atom_agent.context import Context
from atom_agent.resources import Resources
from atom_agent.testing import ScriptedChatModel

_SPEC = importlib.util.spec_from_file_location(
    "repo_generation_ceiling",
    Path(__file__).resolve().parents[3] / "benchmarks" / "repo_generation_ceiling.py",
)
assert _SPEC is not None and _SPEC.loader is not None
ceiling = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ceiling)

# An oracle with shared/repotasks/oracle.py's `score`: the candidate's double(3) must be 6.
ORACLE = """\
import importlib.util


def score(candidate, task_dir, python, timeout=120):
    spec = importlib.util.spec_from_file_location("m", candidate / "pkg" / "calc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got = mod.double(3)
    ok = got == 6
    tail = "" if ok else (
        "FAILED tests/test_calc.py::test_double - assert %r == 6\\nE   assert %r == 6" % (got, got)
    )
    return {
        "id": task_dir.name,
        "verdict": "PASS" if ok else "FAIL",
        "oracle": {"passed": int(ok), "failed": int(not ok), "skipped": 0, "tail": tail,
                   "failures": [] if ok else ["tests/test_calc.py::test_double"]},
        "regression": {"passed": 1, "failed": 0, "skipped": 0, "tail": "", "failures": []},
    }
"""
CALC = '''def double(x):
    """Twice x."""
    raise NotImplementedError
'''
STUB = "```python\ndef double(x):\n    pass\n```"
WRONG = "```python\ndef double(x):\n    return x + 2\n```"
RIGHT = "```python\ndef double(x):\n    return 2 * x\n```"


def _out(tmp_path: Path) -> tuple[Path, ModuleType]:
    out = tmp_path / "out"
    repo = out / "t-double" / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "calc.py").write_text(CALC)
    (repo / "pkg" / "__init__.py").write_text("")
    target = {"file": "pkg/calc.py", "module": "pkg.calc", "qualname": "double"}
    (out / "t-double" / "task.json").write_text(json.dumps({"id": "t-double", "target": target}))
    task = {"id": "t-double", "task": "Implement pkg.calc.double.", "repo": "t-double/repo"}
    (out / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    (tmp_path / "oracle.py").write_text(ORACLE)
    return out, ceiling.load_oracle(tmp_path / "oracle.py")


def test_samples_score_each_distinct_candidate_and_refuse_stubs(tmp_path: Path) -> None:
    out, oracle = _out(tmp_path)
    item = ceiling.load_tasks(out)[0]
    model = ScriptedChatModel(responses=[STUB, WRONG, RIGHT, RIGHT])
    ws = tmp_path / "ws"
    with Resources(Context(workspace=str(ws / "agent")), models=model) as res:
        row = ceiling.samples_task(res, oracle, item, ws, 4, 0.8)
    assert [v["verdict"] for v in row["verdicts"]] == ["FAIL", "FAIL", "PASS", "PASS"]
    assert "no body" in row["verdicts"][0]["counts"]
    assert row["distinct"] == 2  # the stub is no candidate, the last is the third again
    assert [c.kwargs.get("temperature") for c in model.calls] == [0.0, 0.8, 0.8, 0.8]
    # The agent's own edit request, with the target the benchmark knows.
    assert "Write the new definition of `double`" in str(model.calls[0].messages[-1].content)
    assert "return 2 * x" in (ws / "sample2" / "t-double" / "repo" / "pkg" / "calc.py").read_text()
    # The prepared repo itself is never written.
    assert (out / "t-double" / "repo" / "pkg" / "calc.py").read_text() == CALC


def test_a_retry_is_told_what_the_oracle_saw_fail_not_its_previous_version(
    tmp_path: Path,
) -> None:
    out, oracle = _out(tmp_path)
    item = ceiling.load_tasks(out)[0]

    def respond(messages: list[BaseMessage]) -> str:
        return RIGHT if "assert 5 == 6" in str(messages[-1].content) else WRONG

    model = ScriptedChatModel(respond=respond)
    ws = tmp_path / "ws"
    with Resources(Context(workspace=str(ws / "agent")), models=model) as res:
        row = ceiling.repair_task(res, oracle, item, ws, 3)
    assert [v["verdict"] for v in row["verdicts"]] == ["FAIL", "PASS"]
    assert len(model.calls) == 2  # stops once the oracle passes
    told = str(model.calls[1].messages[-1].content)
    assert "FAILED tests/test_calc.py::test_double - assert 5 == 6" in told
    assert "return x + 2" not in told  # as the agent's retry: what failed, not the code
    assert row["unchanged"] == 0
