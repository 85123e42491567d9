"""Executor node: one attempt of one step as a ReAct loop (`create_agent`) on tiered context."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.ai import add_usage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.errors import GraphRecursionError
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from atom_agent import prompts
from atom_agent.context import Context
from atom_agent.errors import ConfigError, ToolConfigError
from atom_agent.models import LocalChatModel
from atom_agent.models.local import allowed_tools_choice
from atom_agent.reconstruct import reconstruct_context
from atom_agent.services import Models, Services
from atom_agent.session import SessionContext
from atom_agent.state import State
from atom_agent.telemetry import emit
from atom_agent.tools.code import create_code_tools
from atom_agent.tools.files import ToolScope, create_file_tools
from atom_agent.tools.memory import create_memory_tools
from atom_agent.tools.router import (
    TRUSTED_TOOLS,
    RouteContext,
    RoutingMiddleware,
    ToolRouter,
    route_context,
)
from atom_agent.tools.search import create_search_tools
from atom_agent.usage import model_name_of, usage_of
from atom_agent.workspace import AttemptRef, StepRef, Workspace

from .common import attempt_scope, plan_of, run_ref, services, step_session

logger = logging.getLogger(__name__)

ASK_USER = "ask_user"
REQUIRED_FILES = ("impl.py", "test.py")
LEAN_TOOLS = frozenset({"write_file", "read_file", "edit_file", "list_files", "run_tests"})
"""The executor's tools for small local models: write, read, fix and test."""


def select_tools(available: set[str], setting: str, model: object) -> set[str]:
    """The tool names ``Context.executor_tools`` selects (see its docstring).

    Raises:
        ConfigError: the setting names a tool that does not exist.
    """
    if setting.strip() == "all" or (not setting.strip() and not isinstance(model, LocalChatModel)):
        return set(available)
    wanted = (
        set(LEAN_TOOLS)
        if not setting.strip()
        else {n.strip() for n in setting.split(",") if n.strip()}
    )
    unknown = wanted - available
    if unknown:
        raise ConfigError(
            f"executor_tools: unknown tool(s) {sorted(unknown)}; available: {sorted(available)}"
        )
    return wanted


class AskUserArgs(BaseModel):
    """Arguments of ask_user."""

    question: str = Field(description="one precise question for the user", min_length=3)


def _ask_user(question: str) -> str:
    return json.dumps({"status": "asked", "question": question, "note": "wait for the answer"})


@functools.cache
def ask_user_tool() -> BaseTool:
    """The tool the executor calls when only the user can resolve an ambiguity (stateless)."""
    return StructuredTool.from_function(
        func=_ask_user,
        name=ASK_USER,
        description="Ask the user ONE precise question when the task is ambiguous and you "
        "cannot decide yourself. The run pauses until the user answers; use it rarely.",
        args_schema=AskUserArgs,
    )


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
    """

    scope: ToolScope
    max_tool_calls: int


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

        A reply whose tool call is broken (cut off at the token limit, malformed JSON) would
        end the loop as if the model had answered: it is asked once more, told why.
        """
        request = self._require_tools(request)
        response = handler(request)
        again = _reask_broken_call(request, response)
        if again is None:
            return response
        return _spent_too(handler(again), response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        request = self._require_tools(request)
        response = await handler(request)
        again = _reask_broken_call(request, response)
        if again is None:
            return response
        return _spent_too(await handler(again), response)

    def _require_tools(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        # Small models often "answer" the task in prose on the first turn; an attempt that
        # wrote nothing can only fail, so the answer option is taken away until it has.
        scope = attempt_of(request.runtime).scope
        written = all((scope.staging / f).is_file() for f in REQUIRED_FILES)
        if not request.tools:
            return request
        if written:
            # A small model "gives up" in prose after a failing test run; code decides when
            # its attempt ends (tests pass or the tool budget is spent), so it must keep working.
            if not isinstance(request.model, LocalChatModel):
                return request
            if _rewrote_unchanged(request.messages):
                # Greedy decoding is stuck rewriting the same failing file: sample instead.
                settings = {**request.model_settings, "temperature": UNSTUCK_TEMPERATURE}
                return request.override(tool_choice="any", model_settings=settings)
            return request.override(tool_choice="any")
        request = _missing_files_note(request, scope.staging)
        if isinstance(request.model, LocalChatModel):
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
    if isinstance(request.model, LocalChatModel):
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


def make_executor(models: Models | None) -> Any:
    """The executor node, closed over the model override of `build_graph`."""

    def executor(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        svc = services(runtime, models)
        ctx = svc.ctx
        plan = plan_of(state)
        step_id = state.get("current_step")
        step = next((s for s in plan.steps if s.id == step_id), None)
        if step is None:
            raise RuntimeError(f"executor: current step {step_id!r} is not in the plan")
        step_ref = svc.workspace.step(run_ref(svc, state), step.id)
        attempt = _unfinished_attempt(svc.workspace, step_ref) or svc.workspace.new_attempt(
            step_ref
        )
        session = step_session(state, ctx, step.id, attempt.n)
        scope = attempt_scope(svc.workspace, step_ref, attempt)
        model = svc.model("executor")
        router = attempt_router(svc, scope, session, model)
        prompt = reconstruct_context(
            ctx=ctx,
            task=state["task"],
            plan=plan,
            step=step,
            statuses=dict(state.get("step_status") or {}),
            workspace=svc.workspace,
            step_ref=step_ref,
            attempt=attempt,
            files_text=scope.describe(),
            memory=svc.memory,
            session=session,
            answers=list(state.get("answers") or []),
        )
        emit(
            "executor.attempt",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            prompt_tokens=prompt.tokens,
            memories=len(prompt.memory_ids),
        )
        agent = attempt_agent(svc, model, router.tools(session))
        context = AttemptContext(
            router=router, session=session, scope=scope, max_tool_calls=ctx.max_tool_calls
        )
        messages, stopped = _run(agent, prompt.text, context)
        svc.workspace.write_history(attempt, messages)
        question = _question(messages)
        if question:
            # The attempt ends with a question, not a verdict; tier 1 shows it to the next one.
            svc.workspace.write_verdict(
                attempt,
                {"outcome": "asked the user", "decision": "ask_user", "feedback": question},
            )
        emit(
            "executor.done",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            tool_calls=sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage)),
            question=question,
            stopped=stopped,
        )
        return {
            "attempts": {step.id: attempt.n},
            "usage": usage_of(messages, model_name_of(model)),
            "question": question,
            "used_memories": prompt.memory_ids,
        }

    return executor


def attempt_router(
    svc: Services, scope: ToolScope, session: SessionContext, model: BaseChatModel
) -> ToolRouter:
    """The router of one attempt: its sandboxed tools bound to `scope`, memory tools trusted."""
    memory = svc.memory
    sandboxed: list[BaseTool] = [
        *create_file_tools(scope),
        *create_code_tools(scope, svc.runner, svc.limits),
        *create_search_tools(scope, memory, session),
        ask_user_tool(),
    ]
    chosen = select_tools(
        {t.name for t in sandboxed} | TRUSTED_TOOLS, svc.ctx.executor_tools, model
    )
    trusted_names = chosen & TRUSTED_TOOLS
    return ToolRouter(
        [t for t in sandboxed if t.name in chosen],
        trusted=(lambda s: [t for t in create_memory_tools(memory, s) if t.name in trusted_names])
        if trusted_names
        else None,
        trusted_names=trusted_names or TRUSTED_TOOLS,
        scope=scope,
    )


def attempt_agent(
    svc: Services, model: BaseChatModel, tools: Sequence[BaseTool]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The executor's ReAct agent for `model` and these tools, compiled once per Services.

    Compiling an agent costs milliseconds; an attempt only differs in what it passes as
    ``context=`` (:class:`AttemptContext`: its router, session, scope and budget), so
    attempts (also concurrent ones, in batch) share one agent per tool set.
    """
    key = ("executor-agent", id(model), tuple(_schema_key(t) for t in tools))
    return svc.memo(
        key,
        lambda: create_agent(
            model,
            tools=[],  # the routing middleware brings the tools and answers their calls
            system_prompt=prompts.EXECUTOR_SYSTEM,
            middleware=[RoutingMiddleware(tools), StopMiddleware()],
            context_schema=AttemptContext,
            # An attempt is one unit: after a crash it restarts on its staging (files kept)
            # rather than resuming a half-finished conversation from a nested checkpoint.
            checkpointer=False,
        ),
    )


def _schema_key(tool: BaseTool) -> tuple[str, str, Any]:
    """What the model sees of a tool: name, description, argument schema (hashable)."""
    schema = tool.args_schema
    hashable = schema if isinstance(schema, type) else json.dumps(schema, sort_keys=True)
    return (tool.name, tool.description, hashable)


def _run(
    agent: CompiledStateGraph[Any, Any, Any, Any], prompt: str, context: AttemptContext
) -> tuple[list[BaseMessage], str]:
    """Run one attempt's tool loop: its messages, and why it was cut short ('' if not)."""
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    config: RunnableConfig = {"recursion_limit": 4 * context.max_tool_calls + 20}
    agent_input: Any = {"messages": messages}
    try:
        result = agent.invoke(agent_input, config=config, context=context)
    except GraphRecursionError:
        return messages, "recursion limit"
    return list(result["messages"]), ""


def _unfinished_attempt(workspace: Workspace, step_ref: StepRef) -> AttemptRef | None:
    """The step's latest attempt if it never got a verdict (its process died): reuse it."""
    attempts = workspace.list_attempts(step_ref)
    if attempts and not attempts[-1].verdict_json.exists():
        return attempts[-1]
    return None


def _question(messages: list[BaseMessage]) -> str | None:
    """The question of the attempt's last ask_user call, if that is how it ended."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                if call["name"] == ASK_USER:
                    return str(call["args"].get("question", "")).strip() or None
            return None
    return None
