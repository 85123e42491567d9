"""How an executor attempt is steered: when it stops, what each model call may do, re-asks.

Small models rarely stop by themselves, answer in prose before writing anything, wander, repeat
themselves, or get cut off mid tool call. Code, not the model, decides these things here, in one
agent middleware (:class:`StopMiddleware`) that reads the attempt from the agent's runtime
context (:class:`AttemptContext`), so one compiled agent serves every attempt.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import add_usage
from langgraph.runtime import Runtime

from atom_agent.checks.examples import ExamplesReport, examples_feedback
from atom_agent.errors import ContextWindowError, ToolConfigError
from atom_agent.models.local import allowed_tools_choice
from atom_agent.models.profiles import STANDARD, ModelProfile
from atom_agent.nodes.salvage import salvage_write
from atom_agent.telemetry import emit
from atom_agent.tools.files import ToolScope
from atom_agent.tools.router import RouteContext, route_context

ASK_USER = "ask_user"
"""The tool the executor calls to ask the user a question (the attempt then ends)."""
REQUIRED_FILES = ("impl.py", "test.py")
"""What every attempt must leave in its staging area."""


def tests_passed(content: str) -> bool:
    """Whether a run_tests tool result reports a clean pass (≥ 1 test, no failure, no error)."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        return False
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, dict):
        return False
    return bool(
        data.get("ok", data.get("exit_code") == 0)
        and tests.get("passed", 0) > 0
        and tests.get("failed", 0) == 0
        and tests.get("errors", 0) == 0
    )


@dataclass(frozen=True)
class AttemptContext(RouteContext):
    """What one attempt passes to the shared executor agent as ``context=``.

    Attributes:
        scope: the attempt's files (where impl.py and test.py must appear).
        max_tool_calls: the attempt's tool-call budget.
        profile: the executor model's profile (whether code steers its tool calls).
        check_examples: runs the task's ``>>>`` examples against the staged impl.py (None
            when the task has none); after a failing test run its verdict tells the model
            which side is wrong, the code or its own test.
    """

    scope: ToolScope
    max_tool_calls: int
    profile: ModelProfile = STANDARD
    check_examples: Callable[[], ExamplesReport] | None = None


def attempt_of(runtime: Any) -> AttemptContext:
    """The :class:`AttemptContext` of an executor agent run.

    Raises:
        ToolConfigError: the agent was invoked without one (a wiring error).
    """
    context = route_context(runtime)
    if not isinstance(context, AttemptContext):
        raise ToolConfigError(
            f"the executor agent needs context=AttemptContext(...), not {type(context).__name__}"
        )
    return context


class StopMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Code decides when an attempt stops: tool budget spent, tests pass, or a question asked.

    Small models rarely stop by themselves; without this the loop runs to the recursion limit.
    It holds nothing of one attempt: the budget and the files come from the run's
    :class:`AttemptContext`, so one compiled agent serves every attempt.
    """

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the loop before the next model call when the attempt is over."""
        attempt = attempt_of(runtime)
        messages = state["messages"]
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if len(results) >= attempt.max_tool_calls:
            return {"jump_to": "end"}
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            if last.name == ASK_USER and last.status != "error":
                return {"jump_to": "end"}
            if (
                last.name == "run_tests"
                and tests_passed(str(last.content))
                and all((attempt.scope.staging / f).is_file() for f in REQUIRED_FILES)
            ):
                return {"jump_to": "end"}
        return None

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Until impl.py and test.py exist, the model must call a tool (no early answers).

        A conversation that outgrows the model's context window is sent again without the
        attempt's earlier turns (the files keep their work); if even that does not fit, the
        attempt ends there and the reflector judges the files as they are.

        A reply whose tool call is broken (cut off at the token limit, malformed JSON) would
        end the loop as if the model had answered. A ``write_file`` cut off at the token limit
        is kept up to its last complete line (:mod:`.salvage`) and the model is told on its
        next call; any other broken call is asked once more, told why.
        """
        calls = self._calls(request)
        try:
            call = next(calls)
            while True:
                try:
                    response = handler(call)
                except ContextWindowError as exc:
                    call = calls.throw(exc)
                else:
                    call = calls.send(response)
        except StopIteration as done:
            return cast("ModelResponse[Any]", done.value)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        calls = self._calls(request)
        try:
            call = next(calls)
            while True:
                try:
                    response = await handler(call)
                except ContextWindowError as exc:
                    call = calls.throw(exc)
                else:
                    call = calls.send(response)
        except StopIteration as done:
            return cast("ModelResponse[Any]", done.value)

    def _calls(
        self, request: ModelRequest[Any]
    ) -> Generator[ModelRequest[Any], ModelResponse[Any], ModelResponse[Any]]:
        """The model calls of one step, written once for the sync and async paths.

        Yields each request to send; receives its response (a context-window refusal is
        thrown in); returns the response the agent gets.
        """
        request = _examples_note(_salvage_note(self._require_tools(request)))
        try:
            response = yield request
        except ContextWindowError:
            shorter = _without_earlier_turns(request)
            try:
                response = (yield shorter) if shorter is not None else _out_of_room()
            except ContextWindowError:
                response = _out_of_room()
        if (kept := _salvaged(response)) is not None:
            return kept
        again = _reask_broken_call(request, response)
        if again is None:
            return response
        retry = _spent_too((yield again), response)
        return _salvaged(retry) or retry

    def _require_tools(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        # Small models often "answer" the task in prose on the first turn; an attempt that
        # wrote nothing can only fail, so the answer option is taken away until it has.
        attempt = attempt_of(request.runtime)
        scope, steer = attempt.scope, attempt.profile.steer_tools
        written = all((scope.staging / f).is_file() for f in REQUIRED_FILES)
        if not request.tools:
            return request
        if written:
            # A small model "gives up" in prose after a failing test run; code decides when
            # its attempt ends (tests pass or the tool budget is spent), so it must keep working.
            if not steer:
                return request
            if _rewrote_unchanged(request.messages):
                # Greedy decoding is stuck rewriting the same failing file: sample instead.
                settings = {**request.model_settings, "temperature": UNSTUCK_TEMPERATURE}
                return request.override(tool_choice="any", model_settings=settings)
            return request.override(tool_choice="any")
        request = _missing_files_note(request, scope.staging)
        if steer:
            # A small model also wanders (reading files that do not exist yet): until the
            # files exist it may only write them, or read what its dependencies committed.
            allowed = {"write_file", *(("read_file",) if scope.dependencies else ())}
            present = (getattr(t, "name", None) for t in request.tools)
            names = [n for n in present if isinstance(n, str) and n in allowed]
            if names:
                # Narrowed by tool_choice, not by unbinding tools: the prompt stays the same.
                choice = allowed_tools_choice(names)
                if _rewrote_unchanged(request.messages):
                    # Greedy decoding rewrites the file it has instead of the missing one.
                    settings = {**request.model_settings, "temperature": UNSTUCK_TEMPERATURE}
                    return request.override(tool_choice=choice, model_settings=settings)
                return request.override(tool_choice=choice)
        return request.override(tool_choice="any")


UNSTUCK_TEMPERATURE = 0.7
"""Sampling temperature of a local model once it rewrote a file with identical content."""

BROKEN_CALL_NOTE = (
    "Your last reply was not a complete tool call ({why}), so nothing was done. Call the "
    "tool again with a shorter reply: keep each file under 60 lines (fewer, distinct test "
    "cases; no repeated lines)."
)


MISSING_FILES_NOTE = (
    "Still missing in your staging area: {missing}. Write {it} now with write_file "
    "(impl.py: the implementation; test.py: pytest tests that import from impl)."
)


def _missing_files_note(request: ModelRequest[Any], staging: Path) -> ModelRequest[Any]:
    """After a tool result, while a required file is missing, say which one (for this call)."""
    last = request.messages[-1] if request.messages else None
    if not isinstance(last, ToolMessage):
        return request
    missing = [f for f in REQUIRED_FILES if not (staging / f).is_file()]
    if not missing:
        return request
    note = MISSING_FILES_NOTE.format(
        missing=" and ".join(missing), it="it" if len(missing) == 1 else "them"
    )
    return request.override(messages=[*request.messages, HumanMessage(note)])


def _broken_call(response: ModelResponse[Any]) -> str | None:
    """Why the reply's tool call could not be used (None when it is fine, or an answer)."""
    last = response.result[-1] if response.result else None
    if not isinstance(last, AIMessage) or last.tool_calls or not last.invalid_tool_calls:
        return None
    finish = (last.response_metadata or {}).get("finish_reason")
    if finish == "length":
        return "it was cut off at the token limit"
    return str(last.invalid_tool_calls[0].get("error") or "malformed arguments")[:200]


def _reask_broken_call(
    request: ModelRequest[Any], response: ModelResponse[Any]
) -> ModelRequest[Any] | None:
    """The request to send once more after a broken tool call, or None if the reply is usable.

    The broken reply is not kept in the conversation (its text would only cost prompt); a note
    after the last message says what happened, and a local model samples instead of repeating
    the same greedy reply.
    """
    why = _broken_call(response)
    if why is None:
        return None
    emit("executor.broken_call", reason=why)
    note = HumanMessage(BROKEN_CALL_NOTE.format(why=why))
    if attempt_of(request.runtime).profile.steer_tools:
        settings = {**request.model_settings, "temperature": UNSTUCK_TEMPERATURE}
        return request.override(messages=[*request.messages, note], model_settings=settings)
    return request.override(messages=[*request.messages, note])


def _spent_too(response: ModelResponse[Any], wasted: ModelResponse[Any]) -> ModelResponse[Any]:
    """`response`, its reply also carrying the tokens of the `wasted` call (for budgets)."""
    last, spent = response.result[-1] if response.result else None, wasted.result[-1]
    if not isinstance(last, AIMessage) or not isinstance(spent, AIMessage):
        return response
    if spent.usage_metadata is None:
        return response
    usage = add_usage(last.usage_metadata, spent.usage_metadata)
    return ModelResponse(
        result=[*response.result[:-1], last.model_copy(update={"usage_metadata": usage})],
        structured_response=response.structured_response,
    )


SALVAGED = "atom_salvaged"
"""``response_metadata`` key of a reply rebuilt from a cut-off write (what was kept)."""

SALVAGED_NOTE = (
    "Your last write_file reply was cut off at the token limit. {path} was saved with its "
    "first {kept} complete lines{repeats}. Check it (read_file, run_tests) and fix what is "
    "missing with a shorter write: keep each file under 60 lines, with fewer, distinct cases."
)


def _salvaged(response: ModelResponse[Any]) -> ModelResponse[Any] | None:
    """`response` with its cut-off write_file turned into the call that writes what is usable."""
    last = response.result[-1] if response.result else None
    if not isinstance(last, AIMessage) or _broken_call(response) is None:
        return None
    if (last.response_metadata or {}).get("finish_reason") != "length":
        return None
    kept = salvage_write(str(last.invalid_tool_calls[0].get("args") or ""))
    if kept is None:
        return None
    emit("executor.salvaged_write", path=kept.path, lines=kept.kept, repeats=kept.dropped_repeats)
    call = {
        "name": "write_file",
        "args": {"path": kept.path, "content": kept.content},
        "id": last.invalid_tool_calls[0].get("id") or "call_salvaged",
        "type": "tool_call",
    }
    metadata = {
        **(last.response_metadata or {}),
        SALVAGED: {"path": kept.path, "lines": kept.kept, "repeats": kept.dropped_repeats},
    }
    message = AIMessage(
        content="",
        tool_calls=[call],
        usage_metadata=last.usage_metadata,
        response_metadata=metadata,
        id=last.id,
    )
    return ModelResponse(
        result=[*response.result[:-1], message],
        structured_response=response.structured_response,
    )


def _salvage_note(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """On the call right after a salvaged write, say what was kept (for this call)."""
    messages = request.messages
    at = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    if at < 0 or at + 1 >= len(messages) or not isinstance(messages[at + 1], ToolMessage):
        return request  # no reply yet, or not right after its tool result
    kept = (messages[at].response_metadata or {}).get(SALVAGED)
    if not isinstance(kept, dict):
        return request
    repeats = kept.get("repeats") or 0
    note = SALVAGED_NOTE.format(
        path=kept.get("path"),
        kept=kept.get("lines"),
        repeats=f" ({repeats} repeated test lines left out)" if repeats else "",
    )
    return request.override(messages=[*request.messages, HumanMessage(note)])


EARLIER_TURNS_NOTE = (
    "This attempt's earlier tool calls and results were left out: the conversation outgrew "
    "the model's context window. Your files are as you last wrote them (read_file shows them)."
)
OUT_OF_ROOM = "The conversation no longer fits the model's context window: the attempt ends here."


def _without_earlier_turns(request: ModelRequest[Any]) -> ModelRequest[Any] | None:
    """`request` with only the attempt's prompt and its last turn (None if that is all it has).

    The last turn starts at the last AI reply, so a tool call keeps its result and the notes
    after it.
    """
    messages = request.messages
    last_ai = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    if last_ai <= 1:
        return None
    emit("executor.context_full", dropped=last_ai - 1)
    kept = [messages[0], HumanMessage(EARLIER_TURNS_NOTE), *messages[last_ai:]]
    return request.override(messages=kept)


def _out_of_room() -> ModelResponse[Any]:
    """A final reply that ends the attempt (the loop stops at a reply without tool calls)."""
    emit("executor.context_full", dropped=None)
    return ModelResponse(result=[AIMessage(content=OUT_OF_ROOM)])


def _examples_note(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """After a failing test run, what the task's examples say of impl.py (for this call).

    A small model takes a failing test for a wrong implementation and rewrites correct code,
    while its own test holds the wrong expected value; the task's examples settle which.
    """
    last = request.messages[-1] if request.messages else None
    if not isinstance(last, ToolMessage) or last.name != "run_tests":
        return request
    check = attempt_of(request.runtime).check_examples
    if check is None or tests_passed(str(last.content)):
        return request
    lines = examples_feedback(check(), tests_failed=True)
    if not lines:
        return request
    emit("executor.examples_note", fix="code" if "fix the code" in lines[0] else "test")
    note = HumanMessage("What the task's own examples say: " + " ".join(lines))
    return request.override(messages=[*request.messages, note])


def _rewrote_unchanged(messages: Sequence[BaseMessage]) -> bool:
    """Whether a write_file in this attempt reported an unchanged file (the model repeats)."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == "write_file":
            try:
                if json.loads(str(message.content)).get("unchanged"):
                    return True
            except (ValueError, AttributeError):
                continue
    return False
