"""The one tool entry point: trusted (memory) tools in-process, the rest on the sandboxed path.

Every call, whichever path it takes, emits ``tool_call`` then ``tool_result`` and returns one
:class:`ToolResult` shape. A call the model got wrong (unknown tool, malformed arguments) and a
call without a session are error results, never exceptions.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import ValidationError

from atom_agent.errors import ToolConfigError
from atom_agent.session import SessionContext
from atom_agent.telemetry import emit
from atom_agent.tools.files import ToolScope, to_json, tool_error_json, validation_error_json

logger = logging.getLogger(__name__)

TRUSTED_TOOLS = frozenset({"remember", "recall", "forget"})
"""Tools run in-process with the session (the memory tools of DESIGN §4)."""

Route = Literal["trusted", "sandboxed", "rejected"]
TrustedFactory = Callable[[SessionContext], Sequence[BaseTool]]
"""Builds the trusted tools for a session, e.g. ``partial(create_memory_tools, manager)``."""

_ARG_PREVIEW = 200


@dataclass(frozen=True)
class ToolResult:
    """The one result shape of every tool call.

    Attributes:
        status: ``ok`` or ``error``.
        content: JSON text for the model (an error is ``{"error": "..."}``).
        tool_name: the tool called (as the model named it).
        tool_call_id: the model's call id, to pair the result with the call.
        duration_ms: wall time of the call.
        route: ``trusted`` (in-process), ``sandboxed``, or ``rejected`` (never ran).
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

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict."""
        return asdict(self)


class ToolRouter:
    """Routes tool calls: trusted tools in-process, the others through the sandboxed tools.

    Args:
        sandboxed: the scope-confined tools (file, code, search), e.g. from
            ``create_file_tools(scope)``; code tools run in the sandbox runner.
        trusted: builds the trusted tools for a session (the memory tools); None = none.
        trusted_names: names that take the trusted path.
        scope: the attempt the sandboxed tools are bound to; calls from a session of another
            run/step/attempt are refused as a wiring error.

    Raises:
        ToolConfigError: duplicate tool names, or a sandboxed tool with a trusted name.
    """

    def __init__(
        self,
        sandboxed: Sequence[BaseTool] = (),
        *,
        trusted: TrustedFactory | None = None,
        trusted_names: Iterable[str] = TRUSTED_TOOLS,
        scope: ToolScope | None = None,
    ) -> None:
        self.trusted_names = frozenset(trusted_names)
        self._sandboxed: dict[str, BaseTool] = {}
        for tool in sandboxed:
            if tool.name in self._sandboxed:
                raise ToolConfigError(f"two sandboxed tools are named {tool.name!r}")
            if tool.name in self.trusted_names:
                raise ToolConfigError(
                    f"{tool.name!r} is a trusted tool name; it cannot be "
                    f"registered on the sandboxed path"
                )
            self._sandboxed[tool.name] = tool
        self._trusted_factory = trusted
        self._trusted: dict[SessionContext, dict[str, BaseTool]] = {}
        # Agents run parallel tool calls in threads: build each session's tools once.
        self._lock = threading.Lock()
        self.scope = scope

    # --- what the model can call -------------------------------------------------------------

    def trusted_tools(self, session: SessionContext) -> dict[str, BaseTool]:
        """The trusted tools for `session`, by name (built once per session)."""
        if self._trusted_factory is None:
            return {}
        with self._lock:
            built = self._trusted.get(session)
            if built is None:
                built = {}
                for tool in self._trusted_factory(session):
                    if tool.name not in self.trusted_names:
                        raise ToolConfigError(
                            f"the trusted factory made {tool.name!r}, which is "
                            f"not one of {sorted(self.trusted_names)}"
                        )
                    built[tool.name] = tool
                self._trusted[session] = built
        return built

    def tools(self, session: SessionContext) -> list[BaseTool]:
        """Every tool the model may call in `session` (their schemas go to the model)."""
        return [*self._sandboxed.values(), *self.trusted_tools(session).values()]

    def route_of(self, name: str) -> Route:
        """Which path a tool name takes (``rejected`` for names nobody registered)."""
        if name in self.trusted_names and self._trusted_factory is not None:
            return "trusted"
        if name in self._sandboxed:
            return "sandboxed"
        return "rejected"

    # --- the entry point ---------------------------------------------------------------------

    def execute(self, call: Mapping[str, Any], session: SessionContext | None) -> ToolResult:
        """Run one tool call (``{"name", "args", "id"}``) for `session`.

        Never raises for the model's mistakes (unknown tool, malformed arguments) or a missing
        session: those are error results.

        Raises:
            ToolConfigError: the session belongs to another attempt than the tools' scope.
        """
        started = time.perf_counter()
        raw_name = call.get("name") if isinstance(call, Mapping) else None
        name = raw_name if isinstance(raw_name, str) else ""
        call_id = str(call.get("id") or "") if isinstance(call, Mapping) else ""
        route = self.route_of(name)
        raw_args = call.get("args") if isinstance(call, Mapping) else None
        ids = _session_fields(session)
        emit(
            "tool_call",
            tool_name=name,
            tool_call_id=call_id,
            route=route,
            args=_preview(raw_args),
            **ids,
        )
        try:
            status, content, ran = self._dispatch(name, raw_args, call_id, route, session)
        except ToolConfigError:
            raise  # a wiring error of the caller, not something the model can act on
        except Exception as exc:  # the last safety net: every call ends in a tool result
            logger.exception("tool call %r (%s) raised", name, call_id)
            status, content, ran = "error", _error(unexpected_error(name, exc)), True
        if not ran:
            route = "rejected"
        result = ToolResult(
            status=status,
            content=content,
            tool_name=name,
            tool_call_id=call_id,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            route=route,
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

    async def aexecute(self, call: Mapping[str, Any], session: SessionContext | None) -> ToolResult:
        """:meth:`execute` off the event loop (tools block: files, subprocesses)."""
        return await asyncio.to_thread(self.execute, call, session)

    def middleware(self, session: SessionContext) -> AgentMiddleware[Any, Any, Any]:
        """An agent middleware that registers the tools and routes every call through here.

        ``create_agent(model, middleware=[router.middleware(session)])`` gives the model the
        tools of :meth:`tools` and sends each of its calls through :meth:`execute`.
        """
        return RouterMiddleware(self, session)

    # --- internals ---------------------------------------------------------------------------

    def _dispatch(
        self, name: str, raw_args: Any, call_id: str, route: Route, session: SessionContext | None
    ) -> tuple[Literal["ok", "error"], str, bool]:
        """(status, content, whether a tool actually ran)."""
        if not name:
            return "error", _error("malformed tool call: it has no tool name"), False
        if route == "rejected":
            known = ", ".join(self._known_names())
            return "error", _error(f"unknown tool {name!r}; available tools: {known}"), False
        if not isinstance(session, SessionContext):
            return (
                "error",
                _error(
                    "no session context: tool calls run inside a session "
                    "(session_id, project_id); the run was started without "
                    "one"
                ),
                False,
            )
        args = _parse_args(raw_args)
        if isinstance(args, str):
            return "error", _error(args), False
        if route == "trusted":
            tool = self.trusted_tools(session).get(name)
            if tool is None:
                return "error", _error(f"unknown tool {name!r}"), False
        else:
            self._check_owner(session)
            tool = self._sandboxed[name]
        return (*_invoke(tool, name, args, call_id), True)

    def _known_names(self) -> list[str]:
        names = list(self._sandboxed)
        if self._trusted_factory is not None:
            names += sorted(self.trusted_names)
        return names

    def _check_owner(self, session: SessionContext) -> None:
        if self.scope is None or self.scope.owner is None or session.run_id is None:
            return
        theirs = (session.run_id, session.step_id, session.attempt)
        if theirs != self.scope.owner:
            raise ToolConfigError(
                f"tools bound to {self.scope.owner} were called from a session of {theirs}"
            )


class RouterMiddleware(AgentMiddleware[Any, Any, Any]):
    """Routes an agent's tool calls through a :class:`ToolRouter` (``ToolRouter.middleware``)."""

    def __init__(self, router: ToolRouter, session: SessionContext) -> None:
        super().__init__()
        self.router = router
        self.session = session
        self.tools = router.tools(session)

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "AtomToolRouter"

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Answer the call through the router instead of the agent's own tool node."""
        return self.router.execute(request.tool_call, self.session).to_message()

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        return (await self.router.aexecute(request.tool_call, self.session)).to_message()


@dataclass(frozen=True)
class RouteContext:
    """The ``context=`` of an agent run whose calls a shared :class:`RoutingMiddleware` routes.

    Attributes:
        router: this run's router (its sandboxed tools are bound to one attempt's scope).
        session: the session this run's calls act for.
    """

    router: ToolRouter
    session: SessionContext


def route_context(runtime: Any) -> RouteContext:
    """The :class:`RouteContext` of an agent run (its ``runtime.context``).

    Raises:
        ToolConfigError: the agent was invoked without one (a wiring error, not the model's).
    """
    context = getattr(runtime, "context", None)
    if not isinstance(context, RouteContext):
        raise ToolConfigError(
            "this agent routes tool calls through the run's context: invoke it with "
            f"context=RouteContext(router, session), not {type(context).__name__}"
        )
    return context


class RoutingMiddleware(AgentMiddleware[Any, Any, Any]):
    """Routes each tool call through the router in the run's :class:`RouteContext`.

    Unlike :class:`RouterMiddleware`, it holds nothing of one run, so one compiled agent
    serves every attempt, also concurrently: each ``agent.invoke(..., context=…)`` brings its
    own router and session. The agent gets stand-ins of `tools` (same names, descriptions
    and argument schemas, for the model); a stand-in refuses to run, so a call can only
    reach the tools of its own run's router.
    """

    def __init__(self, tools: Sequence[BaseTool]) -> None:
        super().__init__()
        self.tools = [schema_only(t) for t in tools]

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "AtomToolRouter"

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Answer the call through the run's router instead of the agent's own tool node."""
        route = route_context(request.runtime)
        return route.router.execute(request.tool_call, route.session).to_message()

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        route = route_context(request.runtime)
        return (await route.router.aexecute(request.tool_call, route.session)).to_message()


def schema_only(tool: BaseTool) -> BaseTool:
    """A stand-in with `tool`'s name, description and arguments that refuses to run."""
    name = tool.name  # not the tool itself: a stand-in must not keep a run's tools alive

    def refuse(**_: Any) -> str:
        raise ToolConfigError(
            f"{name!r} is a schema stand-in: its calls go through the run's ToolRouter"
        )

    return StructuredTool(
        name=tool.name, description=tool.description, args_schema=tool.args_schema, func=refuse
    )


def _invoke(
    tool: BaseTool, name: str, args: dict[str, Any], call_id: str
) -> tuple[Literal["ok", "error"], str]:
    try:
        output = tool.invoke({"type": "tool_call", "name": name, "args": args, "id": call_id})
    except ValidationError as exc:  # a tool without handle_validation_error
        return "error", validation_error_json(exc)
    except ToolException as exc:  # a tool without handle_tool_error
        return "error", tool_error_json(exc)
    except ToolConfigError:
        raise
    except Exception as exc:  # a tool's own failure (OSError, RecursionError …) is a result
        logger.exception("tool %r raised", name)
        return "error", _error(unexpected_error(name, exc))
    if isinstance(output, ToolMessage):
        failed = output.status == "error"
        content: Any = output.content
    else:
        failed, content = False, output
    return ("error" if failed else "ok"), _as_json(content, failed)


def unexpected_error(name: str, exc: BaseException) -> str:
    """The model-facing text of an exception a tool did not turn into a refusal itself."""
    if isinstance(exc, OSError) and exc.strerror:
        code = errno.errorcode.get(exc.errno or 0, "")
        what = f"{exc.strerror}{f' ({code})' if code else ''}"
    else:
        what = f"{type(exc).__name__}: {_printable(str(exc))[:_ARG_PREVIEW]}"
    return (
        f"{name} failed: {what}. The call may not have done anything; check with "
        f"list_files or read_file, then try a plainer path or a smaller input"
    )


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
