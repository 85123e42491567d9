"""Models factories for CLI subprocess tests (`--models-factory tests.unit.graph.factory:…`)."""

from __future__ import annotations

import os
import time

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.models.purpose import CallInfo
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel

from .scripts import (
    ADD_IMPL,
    WHOLE_TASK,
    ExecutorScript,
    models,
    passing_attempt,
    planner_model,
    run_tests,
    step,
    write,
)


def two_slow_steps() -> dict[str, ScriptedChatModel]:
    """Two independent steps; the executor takes ATOM_TEST_LATENCY seconds per call.

    With ATOM_TEST_GATE set, a step's calls wait instead until that file exists: a test holds
    the run mid-step exactly as long as it needs, then lets it finish at once.
    """
    latency = float(os.environ.get("ATOM_TEST_LATENCY", "0"))
    plan = Plan(steps=[step("one"), step("two")])
    executor = ExecutorScript({("one", 1): passing_attempt(), ("two", 1): passing_attempt()})
    roles = models([plan], executor)
    roles["executor"].latency_s = latency
    gate = os.environ.get("ATOM_TEST_GATE")
    if gate:

        def gated(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
            while info.step and not os.path.exists(gate):
                time.sleep(0.05)
            return executor(messages, info)

        roles["executor"] = ScriptedChatModel(respond=gated)
    return roles


def asks_a_question() -> dict[str, ScriptedChatModel]:
    """One step whose first attempt asks the user."""
    from atom_agent.testing import tool_call

    executor = ExecutorScript(
        {
            ("one", 1): [tool_call("ask_user", {"question": "Which name?"})],
            ("one", 2): passing_attempt(),
        }
    )
    return models([Plan(steps=[step("one")])], executor)


class _Concurrency:
    """Counts how many executor calls are in flight at once."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0


CONCURRENCY = _Concurrency()


def batch_models() -> dict[str, ScriptedChatModel]:
    """Models for any number of tasks: one-step plans, passing attempts; 'BOOM' tasks crash.

    Every model sleeps ATOM_TEST_LATENCY seconds per call; the executor records peak
    concurrency. With ATOM_TEST_LESSONS set, every task's first attempt fails a test unique to
    this process and call, so each run writes one failure lesson of its own (from the executed
    evidence), and its second attempt passes.
    """
    import time

    latency = float(os.environ.get("ATOM_TEST_LATENCY", "0"))
    lessons = bool(os.environ.get("ATOM_TEST_LESSONS"))
    script = ExecutorScript({}, default=passing_attempt)
    fails_once = ExecutorScript({}, default=_fails_uniquely)

    def plan(messages: list[BaseMessage]) -> Plan:
        return Plan(steps=[step("one")])

    def execute(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if "BOOM" in str(messages[0].content) or any("BOOM" in str(m.content) for m in messages):
            raise RuntimeError("the model provider exploded")
        with CONCURRENCY.lock:
            CONCURRENCY.now += 1
            CONCURRENCY.peak = max(CONCURRENCY.peak, CONCURRENCY.now)
        try:
            time.sleep(latency)
            if lessons and info.attempt == 1 and info.purpose not in WHOLE_TASK:
                return fails_once(messages, info)
            return script(messages, info)
        finally:
            with CONCURRENCY.lock:
                CONCURRENCY.now -= 1

    roles = models([], script, latency_s=latency)
    roles["planner"] = planner_model([plan([])] * 1000, latency_s=latency)
    roles["executor"] = ScriptedChatModel(respond=execute)  # sleeps in `execute`
    return roles


def _fails_uniquely() -> list[AIMessage]:
    """An attempt whose test fails with a message unique to this process and call.

    The reflector's failure lesson quotes the first failing line, so no two lessons are the
    same (an identical lesson would be deduplicated against the shared memory).
    """
    import uuid

    mark = f"lesson {os.getpid()}-{uuid.uuid4().hex[:8]}"
    test = f'from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 6, "{mark}"\n'
    return [write("impl.py", ADD_IMPL), write("test.py", test), run_tests(), AIMessage("Done.")]


def always_fails() -> dict[str, ScriptedChatModel]:
    """One step whose every attempt fails its tests (counts the attempts a run makes)."""
    from .scripts import failing_attempt

    executor = ExecutorScript({}, default=failing_attempt)
    return models([Plan(steps=[step("adder")])] * 20, executor)


def two_steps_any_number_of_runs() -> dict[str, ScriptedChatModel]:
    """`two_slow_steps` for a server that runs many threads: the planner repeats its plan."""
    plan = Plan(steps=[step("one"), step("two")])
    executor = ExecutorScript({}, default=passing_attempt)
    roles = models([], executor)
    roles["planner"] = planner_model([plan], cycle=True)
    return roles
