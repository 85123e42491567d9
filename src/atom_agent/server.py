"""The graph LangGraph Server / Studio serve (`langgraph.json`): a factory, one per run.

The server calls :func:`graph` for every run (and for schema and state reads). Each call
builds the run's :class:`~atom_agent.resources.Resources` from the Context the client sent,
with the server's ``ATOM_*`` environment as the defaults of the fields it left out, and
closes them when the run ends. Persistence is the server's own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime

from atom_agent.context import Context
from atom_agent.errors import ConfigError
from atom_agent.graph import build_graph
from atom_agent.resources import Resources, models_from_factory
from atom_agent.state import InputState, State

logger = logging.getLogger(__name__)


def served_context(env: Mapping[str, str] | None = None) -> type[Context]:
    """The server's context schema: Context with the ``ATOM_*`` environment as defaults.

    A bad ``ATOM_*`` value must not stop the server from loading the graph: the schema then
    keeps the built-in defaults, and a run that needs the value fails with the error.
    """
    try:
        return Context.with_env_defaults(env)
    except ConfigError as exc:
        logger.warning("%s; the served graph keeps the built-in defaults", exc)
        return Context


def run_context(schema: type[Context], sent: Any) -> Context:
    """The Context of one served run: the fields the client sent, the schema's defaults else.

    Raises:
        ConfigError: a sent field is unknown or has a bad value.
    """
    if sent is None:
        return schema()
    if isinstance(sent, Context):
        return schema(**{f.name: getattr(sent, f.name) for f in dataclasses.fields(Context)})
    if isinstance(sent, Mapping):
        known = {f.name for f in dataclasses.fields(Context)}
        unknown = sorted(set(sent) - known)
        if unknown:
            raise ConfigError(f"unknown context fields {unknown}; known: {sorted(known)}")
        return schema(**dict(sent))
    raise ConfigError(f"the run's context must be an object of Context fields, not {sent!r}")


Served = CompiledStateGraph[State, Context, InputState, State]


@asynccontextmanager
async def graph(runtime: ServerRuntime[Any]) -> AsyncIterator[Served]:
    """The graph of one server call, over Resources built from that run's Context.

    Models come from the Context's specs; ``ATOM_MODELS_FACTORY=module:callable`` overrides
    them (custom clients, scripted models in tests). Building and closing touch files (the
    environment, imports, the memory store's last writes), so they run in a worker thread:
    the server's event loop never blocks on them.
    """
    execution = runtime.execution_runtime
    resources = await asyncio.to_thread(_open, execution.context if execution is not None else None)
    try:
        yield await asyncio.to_thread(build_graph, resources)
    finally:
        await asyncio.to_thread(resources.close)


def _open(sent: Any) -> Resources:
    """The Resources of one server call (`sent`: the run's context, None for a read)."""
    ctx = run_context(served_context(), sent)
    return Resources(ctx, models=models_from_factory())
