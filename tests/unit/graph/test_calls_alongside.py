"""Independent calls side by side: the contract of a one-step task is written while the plain
answer is asked, where the models answer calls at once (an API, a model server).

Scripted models that meet at a barrier: a run that made the two calls one after the other would
leave the first waiting for the second until the barrier's timeout breaks it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.resources import Resources
from atom_agent.testing import ScriptedChatModel

from .scripts import WHOLE_TASK

TASK = "Write a Python function clamp(x, low, high) that returns x limited to [low, high]."
CODE = "def clamp(x, low, high):\n    return max(low, min(x, high))\n"
CONTRACT = "assert clamp(5, 0, 3) == 3\nassert clamp(-1, 0, 3) == 0\nassert clamp(2, 0, 3) == 2\n"


class Meeting:
    """Counts the calls in flight; with `barrier`, the plain answer and the contract wait for
    each other."""

    def __init__(self, barrier: threading.Barrier | None) -> None:
        self.barrier = barrier
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.purposes: list[str] = []

    def call(self, info: CallInfo, reply: str) -> AIMessage:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
            self.purposes.append(info.purpose)
        try:
            if self.barrier is not None and info.purpose in ("plain", "contract"):
                self.barrier.wait()
            return AIMessage(content=f"```python\n{reply}```\n")
        finally:
            with self.lock:
                self.active -= 1


def _models(meeting: Meeting) -> dict[str, ScriptedChatModel]:
    def planner(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        assert info.purpose == "contract", info
        return meeting.call(info, CONTRACT)

    def executor(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        assert info.purpose in WHOLE_TASK, info
        return meeting.call(info, CODE)

    return {
        "planner": ScriptedChatModel(respond=planner),
        "executor": ScriptedChatModel(respond=executor),
    }


def test_the_contract_is_written_while_the_plain_answer_is_asked(tmp_path: Path) -> None:
    meeting = Meeting(threading.Barrier(2, timeout=20))
    ctx = Context(workspace=str(tmp_path / "ws"), parallel_calls=2, max_attempts=1)
    outcome = run_task(TASK, ctx, models=_models(meeting))  # type: ignore[arg-type]
    assert outcome.status == "done", outcome
    assert meeting.most == 2 and sorted(meeting.purposes) == ["contract", "plain"]
    run_dir = Path(ctx.workspace) / "runs" / outcome.run_id
    calls = json.loads((run_dir / "run.json").read_text())["calls"]
    # Both calls are counted, each once, whichever thread made it.
    assert calls["plain"]["calls"] == 1 and calls["contract"]["calls"] == 1, calls
    plan = json.loads((run_dir / "plan.json").read_text())["revisions"][-1]["plan"]
    checks = [c["call"] for c in plan["steps"][0]["checks"]]
    assert "clamp(5, 0, 3)" in checks, checks  # the contract written alongside is the plan's


def test_models_given_as_objects_are_asked_one_call_at_a_time(tmp_path: Path) -> None:
    # What serves a model object is unknown: by default its calls are not made side by side.
    meeting = Meeting(None)
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1)
    outcome = run_task(TASK, ctx, models=_models(meeting))  # type: ignore[arg-type]
    assert outcome.status == "done", outcome
    assert meeting.most == 1 and meeting.purposes == ["plain", "contract"]


def test_a_failing_call_alongside_raises_its_own_error_and_keeps_the_plain_answer(
    tmp_path: Path,
) -> None:
    meeting = Meeting(None)
    models = _models(meeting)

    def broken(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        raise ConnectionError("the contract's server went away")

    models["planner"] = ScriptedChatModel(respond=broken)
    ctx = Context(workspace=str(tmp_path / "ws"), parallel_calls=2, max_attempts=1)
    # As when the calls are made one after the other: the error is the run's, not a thread's.
    with pytest.raises(ConnectionError, match="went away"):
        run_task(TASK, ctx, models=models, run_id="cut")  # type: ignore[arg-type]
    # The plain answer made alongside is on disk: a resume starts from it.
    plain = Path(ctx.workspace) / "runs" / "cut" / "plain" / "impl.py"
    assert plain.read_text().strip() == CODE.strip()


def test_auto_is_two_for_an_api_and_one_for_a_server_or_the_embedded_model(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    with Resources(Context(workspace=ws, model="openai:some-model")) as res:
        assert res.parallel_calls("planner", "executor") == 2
    # A server you run may share one machine's cores between its slots: one call at a time.
    served = Context(workspace=ws, model="openai:some-model", base_url="http://127.0.0.1:9/v1")
    with Resources(served) as res:
        assert res.parallel_calls("planner", "executor") == 1
    with Resources(served.replace(parallel_calls=2)) as res:
        assert res.parallel_calls("planner", "executor") == 2
    with Resources(Context(workspace=ws, model="local")) as res:
        assert res.parallel_calls("planner", "executor") == 1
    mixed = Context(workspace=ws, model="openai:some-model", executor_model="local")
    with Resources(mixed) as res:
        assert res.parallel_calls("planner", "executor") == 1
