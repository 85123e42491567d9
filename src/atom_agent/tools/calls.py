"""Every tool call of an agent: telemetry, and one result shape.

:class:`ToolCalls` (one thin middleware) wraps the agent's own tool node; :func:`execute`
runs one call. A call emits ``tool_call`` then ``tool_result``, and a call the model got
wrong (unknown tool, malformed arguments), a call without a session and whatever a tool
raises end in an error result, never an exception;
a wiring or configuration error (:class:`~atom_agent.errors.ToolConfigError`,
:class:`~atom_agent.errors.ConfigError`) raises.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import ValidationError

from atom_agent.errors import ConfigError, ToolConfigError
from atom_agent.prompts import prompt_text, register
from atom_agent.session import SessionContext
from atom_agent.telemetry import emit
from atom_agent.tools.context import ToolContext, tool_context
from atom_agent.tools.memory import MEMORY_TOOL_NAMES
from atom_agent.tools.results import invalid_arguments_text, to_json, tool_error_json

logger = logging.getLogger(__name__)

TOOL_FAILED = register(
    "TOOL_FAILED",
    "{tool} failed: {what}. The call may not have done anything; check with "
    "list_files or read_file, then try a plainer path or a smaller input",
)
"""A tool raised something it did not turn into a refusal itself."""

NO_SESSION = register(
    "NO_SESSION",
    "no session context: tool calls run inside a session (session_id, project_id); the run "
    "was started without one",
)
"""A tool call of an agent run without a session."""

TRUSTED_TOOLS = frozenset(MEMORY_TOOL_NAMES)
"""Tools that run in-process with the session (the memory tools)."""

Route = Literal["trusted", "sandboxed", "rejected"]
"""How a call ran: in-process with the session, on the attempt's files and sandbox, or not."""

_ARG_PREVIEW = 200

Invoke = Callable[[BaseTool, dict[str, Any]], Any]
"""Runs one tool on parsed arguments (the agent's tool node, or a direct ``invoke``)."""


@dataclass(frozen=True)
class ToolResult:
    """The one result shape of every tool call.

    Attributes:
        status: ``ok`` or ``error``.
        content: JSON text for the model (an error is ``{"error": "..."}``).
        tool_name: the tool called (as the model named it).
        tool_call_id: the model's call id, to pair the result with the call.
        duration_ms: wall time of the call.
        route: ``trusted`` (memory, in-process), ``sandboxed``, or ``rejected`` (never ran).
    """

    status: Literal["ok", "error"]
    content: str
    tool_name: str
    tool_call_id: str
    duration_ms: float
    route: Route

    def to_message(self) -> ToolMessage:
        """The result as the ToolMessage an agent loop appends."""
        return ToolMessage(
            content=self.content,
            tool_call_id=self.tool_call_id,
            name=self.tool_name,
            status="error" if self.status == "error" else "success",
        )


class ToolCalls(AgentMiddleware[Any, Any, Any]):
    """Reports every tool call of an agent and turns what goes wrong into error results.

    ``create_agent(model, tools=[...], middleware=[ToolCalls()], context_schema=ToolContext)``;
    the tools read their attempt from the run's context, this only watches the calls.
    """

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the call through the agent's tool node, reported and with one result shape."""
        context = tool_context(request.runtime)

        def invoke(tool: BaseTool, args: dict[str, Any]) -> Any:
            return handler(request.override(tool_call={**request.tool_call, "args": args}))

        known = {t.name: t for t in request.runtime.tools}
        return execute(request.tool_call, context, known, invoke).to_message()

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call` (the tools block: files, subprocesses)."""
        loop = asyncio.get_running_loop()

        def invoke(tool: BaseTool, args: dict[str, Any]) -> Any:
            call = request.override(tool_call={**request.tool_call, "args": args})

            async def run() -> ToolMessage | Command[Any]:
                return await handler(call)

            return asyncio.run_coroutine_threadsafe(run(), loop).result()

        context = tool_context(request.runtime)
        known = {t.name: t for t in request.runtime.tools}
        result = await asyncio.to_thread(execute, request.tool_call, context, known, invoke)
        return result.to_message()


def execute(
    call: Mapping[str, Any], context: ToolContext, known: Mapping[str, BaseTool], invoke: Invoke
) -> ToolResult:
    """One call: checked, reported, run by `invoke`, its outcome as a :class:`ToolResult`."""
    started = time.perf_counter()
    raw_name = call.get("name") if isinstance(call, Mapping) else None
    name = raw_name if isinstance(raw_name, str) else ""
    call_id = str(call.get("id") or "") if isinstance(call, Mapping) else ""
    route: Route = (
        "rejected" if name not in known else "trusted" if name in TRUSTED_TOOLS else "sandboxed"
    )
    raw_args = call.get("args") if isinstance(call, Mapping) else None
    ids = _session_fields(context.session)
    emit(
        "tool_call",
        tool_name=name,
        tool_call_id=call_id,
        route=route,
        args=_preview(raw_args),
        **ids,
    )
    try:
        status, content, ran = _dispatch(name, raw_args, context, known, invoke)
    except (ToolConfigError, ConfigError):
        raise  # a wiring or configuration error of the caller, not something the model can act on
    except ValidationError as exc:  # a tool without handle_validation_error
        status, content, ran = "error", _error(invalid_arguments_text(name, exc)), True
    except ToolException as exc:  # a tool without handle_tool_error
        status, content, ran = "error", tool_error_json(exc), True
    except Exception as exc:  # the last safety net: every call ends in a tool result
        logger.exception("tool call %r (%s) raised", name, call_id)
        status, content, ran = "error", _error(unexpected_error(name, exc)), True
    result = ToolResult(
        status=status,
        content=content,
        tool_name=name,
        tool_call_id=call_id,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        route=route if ran else "rejected",
    )
    emit(
        "tool_result",
        tool_name=name,
        tool_call_id=call_id,
        route=result.route,
        status=status,
        duration_ms=result.duration_ms,
        content_chars=len(content),
        **({"error": _error_text(content)} if status == "error" else {}),
        **ids,
    )
    return result


def _dispatch(
    name: str,
    raw_args: Any,
    context: ToolContext,
    known: Mapping[str, BaseTool],
    invoke: Invoke,
) -> tuple[Literal["ok", "error"], str, bool]:
    """(status, content, whether a tool actually ran)."""
    if not name:
        return "error", _error("malformed tool call: it has no tool name"), False
    tool = known.get(name)
    if tool is None:
        available = ", ".join(known)
        return "error", _error(f"unknown tool {name!r}; available tools: {available}"), False
    if not isinstance(context.session, SessionContext):
        return "error", _error(prompt_text("NO_SESSION")), False
    args = _parse_args(raw_args)
    if isinstance(args, str):
        return "error", _error(args), False
    output = invoke(tool, args)
    if isinstance(output, ToolMessage):
        failed = output.status == "error"
        content: Any = output.content
    else:
        failed, content = False, output
    return ("error" if failed else "ok"), _as_json(content, failed), True


def unexpected_error(name: str, exc: BaseException) -> str:
    """The model-facing text of an exception a tool did not turn into a refusal itself."""
    if isinstance(exc, OSError) and exc.strerror:
        code = errno.errorcode.get(exc.errno or 0, "")
        what = f"{exc.strerror}{f' ({code})' if code else ''}"
    else:
        what = f"{type(exc).__name__}: {_printable(str(exc))[:_ARG_PREVIEW]}"
    return prompt_text("TOOL_FAILED").format(tool=name, what=what)


def _printable(text: str) -> str:
    """`text` with anything UTF-8 cannot carry (lone surrogates) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _as_json(content: Any, failed: bool) -> str:
    if isinstance(content, str):
        try:
            json.loads(content)
            return content
        except ValueError:
            return to_json({"error": content} if failed else {"result": content})
    try:
        return json.dumps(content, ensure_ascii=False)
    except (TypeError, ValueError):
        return to_json({"error" if failed else "result": str(content)})


def _parse_args(raw: Any) -> dict[str, Any] | str:
    """The call's arguments as a dict, or a message saying why they are malformed."""
    if raw is None:
        return {}
    if isinstance(raw, str):  # some providers send the arguments as JSON text
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:
            return f"malformed tool arguments: not valid JSON ({exc}); send a JSON object"
    if not isinstance(raw, dict):
        return f"malformed tool arguments: expected a JSON object, got {type(raw).__name__}"
    return raw


def _error(message: str) -> str:
    return to_json({"error": message})


def _error_text(content: str) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        return content[:_ARG_PREVIEW]
    text = data.get("error", content) if isinstance(data, dict) else content
    return str(text)[:_ARG_PREVIEW]


def _preview(args: Any, depth: int = 0) -> Any:
    """Arguments for the event log: long strings shortened (file contents stay out of logs).

    Nesting is cut at a few levels (a model's 10,000-deep list must not recurse the log) and
    strings are made UTF-8-safe.
    """
    if isinstance(args, dict | list) and depth >= 4:
        return f"<{type(args).__name__} of {len(args)}>"
    if isinstance(args, dict):
        return {_printable(str(k))[:_ARG_PREVIEW]: _preview(v, depth + 1) for k, v in args.items()}
    if isinstance(args, list):
        return [_preview(v, depth + 1) for v in args[:20]]
    if isinstance(args, str) and len(args) > _ARG_PREVIEW:
        return f"<{len(args)} chars>"
    if isinstance(args, str):
        return _printable(args)
    if args is None or isinstance(args, int | float | bool):
        return args
    return _printable(repr(args)[:_ARG_PREVIEW])


def _session_fields(session: SessionContext | None) -> dict[str, Any]:
    if not isinstance(session, SessionContext):
        return {"session_id": None}
    return {
        "session_id": session.session_id,
        "project_id": session.project_id,
        "run_id": session.run_id,
        "step_id": session.step_id,
        "attempt": session.attempt,
    }
