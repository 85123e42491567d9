"""The contract calls of a plan's steps do not depend on each other: made at once when allowed."""

from __future__ import annotations

import threading

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.models.concurrent import at_once
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Plan, PlanStep
from atom_agent.testing import ScriptedChatModel
from atom_agent.verification.contracts import write_contracts

TASK = "Write clamp(x, low, high) limiting x to [low, high], and sign(x) giving -1, 0 or 1."
TESTS = {
    "step1": "assert clamp(5, 0, 3) == 3\nassert clamp(-1, 0, 3) == 0\n",
    "step2": "assert sign(-4) == -1\nassert sign(0) == 0\n",
}


def _plan() -> Plan:
    return Plan(
        steps=[
            PlanStep(id="step1", title="clamp", description="Write clamp.",
                     acceptance_criteria=["clamp limits x to [low, high]"], defines=["clamp"]),
            PlanStep(id="step2", title="sign", description="Write sign.",
                     acceptance_criteria=["sign gives -1, 0 or 1"], defines=["sign"]),
        ]
    )  # fmt: skip


def _model(barrier: threading.Barrier | None, seen: list[str]) -> ScriptedChatModel:
    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        assert info.purpose == "contract"
        seen.append(info.step)
        if barrier is not None:
            barrier.wait()  # one after the other, the first would wait here for nobody
        return AIMessage(content=f"```python\n{TESTS[info.step]}```\n")

    return ScriptedChatModel(respond=respond)


def test_two_steps_contracts_are_asked_at_once_and_kept_in_plan_order() -> None:
    seen: list[str] = []
    plan, spent = write_contracts(
        _model(threading.Barrier(2, timeout=20), seen), TASK, _plan(), parallel=2
    )
    assert sorted(seen) == ["step1", "step2"] and len(spent) == 2
    calls = [[c.call for c in s.checks] for s in plan.steps]
    assert "clamp(5, 0, 3)" in calls[0] and "sign(-4)" in calls[1], calls


def test_one_at_a_time_gives_the_same_plan() -> None:
    seen: list[str] = []
    serial, _ = write_contracts(_model(None, seen), TASK, _plan(), parallel=1)
    assert seen == ["step1", "step2"]
    together, _ = write_contracts(
        _model(threading.Barrier(2, timeout=20), []), TASK, _plan(), parallel=2
    )
    assert together == serial


def test_at_once_raises_a_calls_error_after_every_call_ended() -> None:
    ended: list[str] = []

    def fine() -> str:
        ended.append("fine")
        return "ok"

    def broken() -> str:
        raise ValueError("no reply")

    with pytest.raises(ValueError, match="no reply"):
        at_once({"a": broken, "b": fine}, parallel=2)
    assert ended == ["fine"]
    assert at_once({"a": fine}, parallel=4) == {"a": "ok"}
