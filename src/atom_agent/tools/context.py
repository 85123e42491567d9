"""What a tool reads from its agent run: the attempt's scope, session, sandbox and memory.

The tools are plain LangChain tools, the same objects for every run; each call finds what it
acts on in the run's context (``agent.invoke(..., context=ToolContext(...))``), injected as
``runtime: ToolRuntime``. Nothing of one run is bound into a tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain.tools import ToolRuntime

from atom_agent.errors import ToolConfigError
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.session import SessionContext
from atom_agent.tools.scope import ToolScope

ToolRun = ToolRuntime[Any, Any]
"""The type of a tool's injected ``runtime`` parameter.

A tool's argument schema is derived from its signature, and LangChain validates the injected
``runtime`` with the model's arguments: a bare ``ToolRuntime`` declares its context ``None``,
so every call would warn that a :class:`ToolContext` is not ``None``. ``Any`` leaves the
context as the run passed it.
"""

SEARCH_SECONDS = 5.0
"""Matching time one search_files call may spend in all (the `regex` engine's timeout)."""


@dataclass(frozen=True)
class ToolContext:
    """The runtime context the tools read (an agent's ``context_schema``, or a subclass).

    Attributes:
        session: whom the calls act for (memory tools; every call is refused without one).
        scope: the attempt's files (file, code and search tools).
        runner: the sandbox the code tools run in.
        limits: the code tools' resource limits.
        memory: the long-term memory (a ``MemoryManager``: memory tools, search_memory).
        max_search_results: cap on search_files matches.
        search_seconds: matching time one search_files call may take before it is an error.
    """

    session: SessionContext | None = None
    scope: ToolScope | None = None
    runner: SandboxRunner | None = None
    limits: Limits = field(default_factory=Limits)
    memory: Any = None
    max_search_results: int = 50
    search_seconds: float = SEARCH_SECONDS

    def need_scope(self) -> ToolScope:
        """The scope (ToolConfigError: a file tool in a run without one)."""
        if self.scope is None:
            raise ToolConfigError("this run's context has no scope: file tools need scope=")
        return self.scope

    def need_runner(self) -> SandboxRunner:
        """The sandbox runner (ToolConfigError: a code tool in a run without one)."""
        if self.runner is None:
            raise ToolConfigError("this run's context has no runner: code tools need runner=")
        return self.runner


def tool_context(runtime: Any) -> ToolContext:
    """The :class:`ToolContext` of an agent run (a tool's or a middleware's ``runtime``).

    Raises:
        ToolConfigError: the agent was invoked without one (a wiring error, not the model's).
    """
    context = getattr(runtime, "context", None)
    if not isinstance(context, ToolContext):
        raise ToolConfigError(
            "these tools read their attempt from the run's context: invoke the agent with "
            f"context=ToolContext(...), not {type(context).__name__}"
        )
    return context
