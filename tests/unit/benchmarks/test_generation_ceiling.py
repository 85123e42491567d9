"""benchmarks/generation_ceiling.py: samples and oracle-told repairs, scored by the oracle."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from langchain_core.messages import BaseMessage

from atom_agent.context import Context
from atom_agent.resources import Resources
from atom_agent.testing import ScriptedChatModel

_SPEC = importlib.util.spec_from_file_location(
    "generation_ceiling",
    Path(__file__).resolve().parents[3] / "benchmarks" / "generation_ceiling.py",
)
assert _SPEC is not None and _SPEC.loader is not None
ceiling = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ceiling)

# An oracle with shared/devtasks/oracle.py's command line and output.
ORACLE = """\
import importlib.util, sys
from pathlib import Path


def check_double(ns):
    assert ns["double"](3) == 6, "double(3) should be 6"


ws, prefix = Path(sys.argv[1]), sys.argv[2]
for tid, check in {"t-double": check_double}.items():
    run = ws / "runs" / f"{prefix}.{tid}"
    impl = run / "steps" / "step1" / "committed" / "artifacts" / "impl.py"
    spec = importlib.util.spec_from_file_location("m", impl)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
        check(vars(mod))
        print(f"{tid}: PASS")
    except Exception as e:
        print(f"{tid}: FAIL {type(e).__name__}: {e}")
"""
TASKS = [{"id": "t-double", "task": "Write double(x) that returns twice x."}]
WRONG = "```python\ndef double(x):\n    return x + 2\n```"
RIGHT = "```python\ndef double(x):\n    return 2 * x\n```"


def _oracle(tmp_path: Path) -> Path:
    path = tmp_path / "oracle.py"
    path.write_text(ORACLE)
    return path


def test_samples_count_the_draws_that_pass_the_oracle(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[WRONG, RIGHT, WRONG])
    ws = tmp_path / "ws"
    with Resources(Context(workspace=str(ws)), models=model) as res:
        rows = ceiling.samples_arm(res, TASKS, ws, 3, 0.8, _oracle(tmp_path))
    assert rows["t-double"]["passed"] == [False, True, False]
    assert [c.kwargs.get("temperature") for c in model.calls] == [0.8, 0.8, 0.8]


def test_a_repair_is_told_the_oracles_failing_check_and_stops_when_it_passes(
    tmp_path: Path,
) -> None:
    def respond(messages: list[BaseMessage]) -> str:
        return RIGHT if "double(3) should be 6" in str(messages[-1].content) else WRONG

    model = ScriptedChatModel(respond=respond)
    ws = tmp_path / "ws"
    with Resources(Context(workspace=str(ws)), models=model) as res:
        rows = ceiling.repair_arm(res, TASKS, ws, 3, _oracle(tmp_path))
    verdicts = rows["t-double"]["verdicts"]
    assert verdicts[0].startswith("FAIL AssertionError: double(3) should be 6")
    assert verdicts[1:] == ["PASS"]
    assert len(model.calls) == 2  # the plain answer and one repair: none after it passed
    assert len(model.calls[1].messages) == 3  # task, the wrong reply, the oracle's message


def test_a_repair_that_hands_back_the_same_module_is_counted(tmp_path: Path) -> None:
    model = ScriptedChatModel(responses=[WRONG], cycle=True)
    ws = tmp_path / "ws"
    with Resources(Context(workspace=str(ws)), models=model) as res:
        rows = ceiling.repair_arm(res, TASKS, ws, 2, _oracle(tmp_path), temperature=0.8)
    assert rows["t-double"]["unchanged"] == 2
    assert len(rows["t-double"]["verdicts"]) == 3
    assert [c.kwargs.get("temperature") for c in model.calls] == [0.0, 0.8, 0.8]
