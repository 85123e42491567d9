"""What the nodes use, built once per process from a Context: models, workspace, memory, sandbox."""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from pydantic import BaseModel

from atom_agent.context import Context
from atom_agent.errors import ConfigError
from atom_agent.memory import MemoryManager
from atom_agent.memory.store import CHROMA_URL_ENV
from atom_agent.models import load_chat_model, resolve_default_model
from atom_agent.sandbox import Limits, SandboxRunner, default_runner
from atom_agent.workspace import Workspace

logger = logging.getLogger(__name__)

ROLES = ("planner", "executor", "reflector")
T = TypeVar("T")

Models = BaseChatModel | Mapping[str, BaseChatModel]
"""One model for every role, or a model per role (planner / executor / reflector)."""


def models_from_factory(target: str | None = None) -> Models | None:
    """Chat models from a ``module:callable`` factory (default: ``ATOM_MODELS_FACTORY``).

    The callable takes no arguments and returns one chat model or a dict per role: the way to
    run the CLI or a LangGraph server on models a spec string cannot describe (custom clients,
    scripted test models). None when no factory is configured.

    Raises:
        ConfigError: the factory cannot be imported or returns something else.
    """
    spec = target or os.environ.get("ATOM_MODELS_FACTORY", "")
    if not spec:
        return None
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"models factory {spec!r}: expected module:callable")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"models factory {spec!r} cannot be loaded: {exc}") from exc
    models = factory()
    if isinstance(models, BaseChatModel):
        return models
    if isinstance(models, dict) and all(isinstance(m, BaseChatModel) for m in models.values()):
        unknown = set(models) - set(ROLES)
        if unknown:
            raise ConfigError(f"models factory {spec!r}: unknown roles {sorted(unknown)}")
        return models
    raise ConfigError(f"models factory {spec!r} returned {type(models).__name__}")


class Services:
    """Models, workspace, memory manager and sandbox runner for one Context.

    Clients and models never go into graph state (it is checkpointed); nodes get them here.
    A Services lives for the process (see :func:`services_for`), so what is expensive to
    build (compiled agents, structured-output runnables) is built once, through :meth:`memo`.
    """

    def __init__(self, ctx: Context, models: Models | None = None) -> None:
        self.ctx = ctx
        self._models = models
        self._loaded: dict[str, BaseChatModel] = {}
        self._memo: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self.workspace = Workspace(Path(ctx.workspace).expanduser())
        self._memory_key = memory_key(ctx)
        self.runner: SandboxRunner = default_runner()
        self.limits = Limits(
            timeout_s=ctx.sandbox_timeout_s,
            cpu_s=ctx.sandbox_cpu_s,
            memory_mb=ctx.sandbox_memory_mb,
            output_bytes=ctx.sandbox_output_bytes,
            network=ctx.sandbox_network,
        )

    def model(self, role: str) -> BaseChatModel:
        """The chat model for `role`: the override given to `build_graph`, else from the Context."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}")
        if isinstance(self._models, BaseChatModel):
            return self._models
        if self._models is not None and role in self._models:
            return self._models[role]
        with self._lock:
            if role not in self._loaded:
                spec = resolve_default_model(self.ctx.model_for(role) or None).spec
                same = next((m for r, m in self._loaded.items() if self.spec(r) == spec), None)
                self._loaded[role] = same or load_chat_model(spec, temperature=self.ctx.temperature)
            return self._loaded[role]

    def spec(self, role: str) -> str:
        """The model spec a role uses (for reports)."""
        if isinstance(self._models, BaseChatModel):
            return type(self._models).__name__
        if self._models is not None and role in self._models:
            return type(self._models[role]).__name__
        return resolve_default_model(self.ctx.model_for(role) or None).spec

    @property
    def memory(self) -> MemoryManager:
        """The long-term memory manager of this Context's store (shared, opened on first use)."""
        return shared_memory(self.ctx, self._memory_key)

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` once per `key` for these Services; later calls return the same object.

        For things that are costly to build and safe to share between runs and threads
        (compiled agents, structured-output runnables). Two threads may both build on a
        first miss; one result is kept and returned to both.
        """
        with self._lock:
            if key in self._memo:
                return cast(T, self._memo[key])
        value = build()  # outside the lock: building may take milliseconds
        with self._lock:
            return cast(T, self._memo.setdefault(key, value))

    def structured(self, role: str, schema: type[BaseModel]) -> Runnable[Any, Any]:
        """``model(role).with_structured_output(schema)``, built once.

        Call it through :func:`atom_agent.models.structured.invoke_structured`, which also
        returns the raw reply (for its token usage).
        """
        model = self.model(role)
        return self.memo(("structured", role, schema), lambda: model.with_structured_output(schema))

    def close(self) -> None:
        """Close the memory store these Services use (other Services of that store too)."""
        close_memory(self.ctx)


SERVICES_KEPT = 32
"""Services kept per process (least recently used dropped; they hold no open handles)."""
MEMORIES_KEPT = 8
"""Memory stores kept open per process (least recently used closed)."""

_CACHE: OrderedDict[tuple[Context, int], Services] = OrderedDict()
_MEMORIES: OrderedDict[tuple[str, ...], MemoryManager] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_OPEN_LOCK = threading.Lock()


def services_for(ctx: Context, models: Models | None = None) -> Services:
    """The process-wide Services of (`ctx`, `models`), built on first use.

    Keyed by the models object's id; the Services holds that object, so the id cannot be
    reused by another object while the entry lives.
    """
    key = (ctx, id(models))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is None:
            found = _CACHE[key] = Services(ctx, models)
            while len(_CACHE) > SERVICES_KEPT:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        return found


def memory_key(ctx: Context) -> tuple[str, ...]:
    """Which store a Context's memory lives in (a Chroma server, or the workspace's folder)."""
    url = ctx.chroma_url or os.environ.get(CHROMA_URL_ENV, "").strip()
    where = ("url", url) if url else ("path", str(Path(ctx.workspace).expanduser().resolve()))
    return (*where, repr(ctx.memory_promotion_threshold))


def shared_memory(ctx: Context, key: tuple[str, ...] | None = None) -> MemoryManager:
    """The process-wide memory manager of `ctx`'s store, opened on first use.

    Runs of every Context that use one store (other models, projects, budgets) share one
    client, one mirror per project and one access-count writer, and keep them between runs:
    opening a store and loading its mirror costs far more than a step's memory calls.

    Args:
        ctx: the run's Context.
        key: ``memory_key(ctx)``, when the caller has it already.
    """
    key = key or memory_key(ctx)
    with _CACHE_LOCK:
        found = _MEMORIES.get(key)
        if found is not None:
            _MEMORIES.move_to_end(key)
            return found
    # One opening at a time: Chroma's client creation is not thread-safe (batch threads
    # would race to create the same store), and the check is repeated under this lock.
    with _OPEN_LOCK:
        with _CACHE_LOCK:
            found = _MEMORIES.get(key)
        if found is None:
            found = MemoryManager.from_context(ctx)
            with _CACHE_LOCK:
                _MEMORIES[key] = found
        evicted: list[MemoryManager] = []
        with _CACHE_LOCK:
            _MEMORIES.move_to_end(key)
            while len(_MEMORIES) > MEMORIES_KEPT:
                evicted.append(_MEMORIES.popitem(last=False)[1])
    for manager in evicted:
        # A manager closed while a run still holds it keeps working (it reopens its
        # collection handles); only its background access-count writer has stopped.
        manager.close()
    return found


def close_memory(ctx: Context) -> None:
    """Close the memory manager of `ctx`'s store, if one is open."""
    with _CACHE_LOCK:
        manager = _MEMORIES.pop(memory_key(ctx), None)
    if manager is not None:
        manager.close()


def close_all() -> None:
    """Close every open memory store and drop every cached Services (tests, batch end, exit)."""
    with _CACHE_LOCK:
        managers = list(_MEMORIES.values())
        _MEMORIES.clear()
        _CACHE.clear()
    for manager in managers:
        manager.close()


# Pending access counts are written when the store closes; runs leave stores open for the
# next run of the process, so the process closes them on its way out.
atexit.register(close_all)
