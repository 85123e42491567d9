"""When an attempt ends: its budget is spent, its tests pass, it asked, or it makes no progress.

No progress: the same call and result again and again, or test runs that pass no more tests
than before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..attempt import ASK_USER, AttemptContext, attempt_of, tests_count, tests_passed

STOPPED = "atom_stopped"
"""``response_metadata`` key of the reply that ends an attempt in place of a model call."""


class StopAttempt(AgentMiddleware[AgentState[Any], Any, Any]):
    """Code, not the model, decides when an attempt stops.

    Small models rarely stop by themselves; without this the loop runs to the recursion limit.
    When the attempt is over, the model is not called: the reply is a final one (no tool
    call) marked with :data:`STOPPED` and the reason, which ends the agent's loop; the executor
    drops it from the conversation (:func:`without_stop`). A model-call wrapper rather than a
    ``before_model`` hook with ``jump_to``: a hook is a graph node of its own, one more
    superstep before every model call (≈ 0.3 ms each, measured). It holds nothing of one
    attempt: the budget and the files come from the run's context.
    """

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The model's reply, or the final reply that ends the attempt."""
        why = over(request.state["messages"], attempt_of(request.runtime))
        return handler(request) if why is None else stop_reply(why)


REPEATS = 3
"""A tool call made this many times with the same result ends the attempt: it is stuck."""

STALLED_RUNS = 2
"""This many test runs in a row that pass no more tests than the best before end the attempt."""


def over(messages: Sequence[BaseMessage], attempt: AttemptContext) -> str | None:
    """Why the attempt is over before its next model call (None: it goes on)."""
    if sum(isinstance(m, ToolMessage) for m in messages) >= attempt.max_tool_calls:
        return "tool budget spent"
    if attempt.time_is_up():
        return f"its time is up ({attempt.time_limit_s:.0f} s)"
    if repeating(messages):
        return f"the same tool call and result {REPEATS} times"
    if stalled(messages, attempt.start_passed):
        return f"{STALLED_RUNS} test runs in a row passed no more tests than before"
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        if last.name == ASK_USER and last.status != "error":
            return "asked the user"
        if last.name == "run_tests" and tests_passed(str(last.content)) and attempt.files_written():
            return "tests passed"
    return None


def stop_reply(why: str) -> ModelResponse[Any]:
    """The reply that ends an attempt: no content, no tool call, `why` in its metadata."""
    return ModelResponse(result=[AIMessage(content="", response_metadata={STOPPED: why})])


def without_stop(messages: list[BaseMessage]) -> tuple[list[BaseMessage], str]:
    """`messages` without a final stop reply, and its reason ('' when the model ended)."""
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and STOPPED in (last.response_metadata or {}):
        return messages[:-1], str(last.response_metadata[STOPPED])
    return messages, ""


def repeating(messages: Sequence[BaseMessage]) -> bool:
    """Whether some tool call (name and arguments) came back with the same result REPEATS times.

    Nothing changed between those calls that the model could see: it is going round in
    circles (the same call running, or a cycle such as a no-op edit and a refused run).
    """
    calls: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                signature = json.dumps([call["name"], call["args"]], sort_keys=True, default=str)
                calls[str(call.get("id"))] = signature
    seen: dict[tuple[str, str], int] = {}
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id in calls:
            key = (calls[message.tool_call_id], str(message.content))
            seen[key] = seen.get(key, 0) + 1
            if seen[key] >= REPEATS:
                return True
    return False


def stalled(messages: Sequence[BaseMessage], start: int | None) -> bool:
    """Whether the last STALLED_RUNS test runs each passed no more tests than the best before.

    `start` is what the staged start passes (it counts as the first run). A loop that fixes
    something shows it in a test run; one that does not is rewriting the same failures.
    """
    best = -1 if start is None else start
    misses = 0
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == "run_tests":
            passed = tests_count(str(message.content))
            if passed is not None and passed > best:
                best, misses = passed, 0
            else:
                misses += 1
    return misses >= STALLED_RUNS
