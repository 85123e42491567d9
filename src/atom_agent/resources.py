"""What a run uses besides its state: models, workspace, memory, sandbox runner.

A :class:`Resources` is built once, at the edge (``run_task``, the CLI, a batch, the server's
graph factory), from one :class:`~atom_agent.context.Context`, and given to
:func:`atom_agent.graph.build_graph`; the nodes close over it and never look anything up.
Nothing here is cached per process: who opens a Resources closes it.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Hashable, Mapping
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar, cast

from langchain_core.caches import BaseCache
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from atom_agent.checkpoints import sqlite_checkpointer
from atom_agent.context import Context
from atom_agent.errors import ConfigError
from atom_agent.memory import MemoryManager
from atom_agent.models import LOCAL, load_chat_model, resolve_default_model
from atom_agent.models.structured import with_schema_computed_once
from atom_agent.prompts import Prompts
from atom_agent.sandbox import Limits, SandboxRunner, default_runner
from atom_agent.workspace import Workspace

logger = logging.getLogger(__name__)

ROLES = ("planner", "executor")
T = TypeVar("T")

Models = BaseChatModel | Mapping[str, BaseChatModel]
"""One model for every role, or a model per role (planner / executor)."""


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


def store_of(ctx: Context) -> tuple[str, ...]:
    """Which memory store a Context uses (a Chroma server, or the workspace's folder)."""
    if ctx.chroma_url:
        return ("url", ctx.chroma_url, repr(ctx.memory_promotion_threshold))
    path = str(Path(ctx.workspace).expanduser().resolve())
    return ("path", path, repr(ctx.memory_promotion_threshold))


class _Shared:
    """What Resources derived from one another share: loaded models, the open store."""

    def __init__(
        self, models: Models | None, runner: SandboxRunner | None, cache: BaseCache | None = None
    ) -> None:
        self.models = models
        self.cache = cache
        self.loaded: dict[tuple[str, float, str], BaseChatModel] = {}
        self.memories: dict[tuple[str, ...], MemoryManager] = {}
        self.savers: dict[str, tuple[SqliteSaver, ExitStack]] = {}
        self.runner = runner
        self.lock = threading.Lock()
        self.closed = False


class Resources:
    """Models, workspace, memory and sandbox runner for one Context.

    Built by the entry point and given to ``build_graph``. Models are loaded and the memory
    store opened on first use, so building one costs nothing a run does not need. Use it as
    a context manager (or call :meth:`close`): closing writes the memory's pending access
    counts and releases its handles.

    Args:
        ctx: the run's Context (the nodes read every setting from it).
        models: chat model(s) to use instead of the Context's specs: one for every role, or
            ``{"planner": …, "executor": …}`` (roles left out are loaded).
        runner: the sandbox runner; default: :func:`atom_agent.sandbox.default_runner`.
        cache: a model-call cache (e.g. :class:`~atom_agent.models.replay.ReplayCache`) put on
            every model these Resources hand out that has none; its owner closes it.
    """

    def __init__(
        self,
        ctx: Context,
        *,
        models: Models | None = None,
        runner: SandboxRunner | None = None,
        cache: BaseCache | None = None,
    ) -> None:
        if isinstance(models, Mapping):
            unknown = set(models) - set(ROLES)
            if unknown:
                raise ConfigError(f"unknown model roles {sorted(unknown)}; roles: {ROLES}")
        self.ctx = ctx
        self.workspace = Workspace(Path(ctx.workspace).expanduser())
        self.limits = Limits.from_context(ctx)
        self.prompts = Prompts(ctx.prompt_replacements())
        """The run's prompts: the user's replacements, and which prompts the run sent."""
        self._shared = _Shared(models, runner, cache)
        self._root = True
        self._memo: dict[Hashable, Any] = {}
        self._memo_lock = threading.Lock()

    def for_context(self, ctx: Context) -> Resources:
        """Resources for another Context that share this one's models, runner and store.

        A batch opens one Resources and derives one per task: a task with other settings
        (project, budgets, model specs) reuses what is loaded and open; a task on another
        store opens that store, which this Resources' :meth:`close` closes.
        """
        derived = Resources.__new__(Resources)
        derived.ctx = ctx
        derived.workspace = Workspace(Path(ctx.workspace).expanduser())
        derived.limits = Limits.from_context(ctx)
        derived.prompts = Prompts(ctx.prompt_replacements())
        derived._shared = self._shared
        derived._root = False
        derived._memo = {}
        derived._memo_lock = threading.Lock()
        return derived

    @property
    def models(self) -> Models | None:
        """The chat models given instead of the Context's specs (None: all from specs)."""
        return self._shared.models

    @property
    def runner(self) -> SandboxRunner:
        """The sandbox runner every sandboxed run of these Resources uses."""
        shared = self._shared
        with shared.lock:
            if shared.runner is None:
                shared.runner = default_runner()
            return shared.runner

    def model(self, role: str) -> BaseChatModel:
        """The chat model for `role`: the one given, else loaded from the Context's spec."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}; roles: {ROLES}")
        given = self._shared.models
        if isinstance(given, BaseChatModel):
            return self._cached(given)
        if given is not None and role in given:
            return self._cached(given[role])
        spec = resolve_default_model(self.ctx.model_for(role) or None).spec
        key = (spec, self.ctx.temperature, self.ctx.base_url)
        with self._shared.lock:
            found = self._shared.loaded.get(key)
            if found is None:
                found = self._shared.loaded[key] = load_chat_model(
                    spec, temperature=self.ctx.temperature, base_url=self.ctx.base_url
                )
        return self._cached(found)

    def _cached(self, model: BaseChatModel) -> BaseChatModel:
        """`model`, answering from these Resources' model-call cache when one is set."""
        cache = self._shared.cache
        if cache is not None and model.cache is None:
            model.cache = cache
        return model

    def parallel_calls(self, *roles: str) -> int:
        """How many independent calls of the models of `roles` a run makes at once.

        ``Context.parallel_calls`` when set; else 2 when every role's model is a provider's API
        (it answers requests independently), and 1 for the embedded model (it decodes one
        sequence at a time: a second call would only wait), for a server at ``base_url`` (its
        slots may share one machine's cores: measured on a 2-slot `llama-server` on 2 cores,
        the plain answer decoded beside the contract took longer, and the run's time limit,
        a multiple of it, grew with it) and for model objects given to the run (what serves
        them is unknown).
        """
        if self.ctx.parallel_calls:
            return self.ctx.parallel_calls
        given = self._shared.models
        for role in roles:
            if isinstance(given, BaseChatModel) or (given is not None and role in given):
                return 1
            spec = resolve_default_model(self.ctx.model_for(role) or None).spec
            if spec == LOCAL or (self.ctx.base_url and spec.startswith("openai:")):
                return 1
        return 2

    def spec(self, role: str) -> str:
        """The model a role uses, as a spec or a class name (for reports)."""
        given = self._shared.models
        if isinstance(given, BaseChatModel):
            return type(given).__name__
        if given is not None and role in given:
            return type(given[role]).__name__
        return resolve_default_model(self.ctx.model_for(role) or None).spec

    def structured(self, role: str, schema: type[BaseModel]) -> Runnable[Any, Any]:
        """``model(role).with_structured_output(schema)``, built once for these Resources.

        Call it through :func:`atom_agent.models.structured.invoke_structured`, which also
        returns the raw reply (for its token usage).
        """
        return self.memo(
            ("structured", role, schema),
            lambda: with_schema_computed_once(self.model(role).with_structured_output(schema)),
        )

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()`` once per `key` for these Resources; later calls return the same object.

        For what is costly to build and safe to share between the attempts of a run
        (compiled agents, structured-output runnables). Two threads may both build on a
        first miss; one result is kept and returned to both.
        """
        with self._memo_lock:
            if key in self._memo:
                return cast(T, self._memo[key])
        value = build()  # outside the lock: building may take milliseconds
        with self._memo_lock:
            return cast(T, self._memo.setdefault(key, value))

    @property
    def memory(self) -> MemoryManager:
        """The long-term memory of this Context's store, opened on first use."""
        shared = self._shared
        key = store_of(self.ctx)
        # One opening at a time: Chroma's client creation is not thread-safe (batch threads
        # would race to create the same store).
        with shared.lock:
            if shared.closed:
                raise ConfigError("these Resources are closed; open new ones for another run")
            found = shared.memories.get(key)
            if found is None:
                found = shared.memories[key] = MemoryManager.from_context(self.ctx)
            return found

    @property
    def checkpointer(self) -> SqliteSaver:
        """The workspace's SQLite checkpointer (WAL), opened on first use, closed by :meth:`close`.

        Every run on these Resources (and on Resources derived from them) in one workspace
        shares it, so their graph can be compiled once (see :func:`atom_agent.run.compiled_graph`).

        Raises:
            EnvironmentFailure: the database cannot be opened (with what to do).
        """
        shared = self._shared
        key = str(self.workspace.root.expanduser().resolve())
        with shared.lock:
            if shared.closed:
                raise ConfigError("these Resources are closed; open new ones for another run")
            found = shared.savers.get(key)
            if found is None:
                stack = ExitStack()
                try:
                    saver = stack.enter_context(sqlite_checkpointer(self.workspace))
                except BaseException:
                    stack.close()
                    raise
                found = shared.savers[key] = (saver, stack)
            return found[0]

    def close(self) -> None:
        """Close the memory stores and checkpoint databases these Resources opened.

        Derived Resources close nothing: their root does.
        """
        if not self._root:
            return
        shared = self._shared
        with shared.lock:
            managers = list(shared.memories.values())
            shared.memories.clear()
            savers = [stack for _, stack in shared.savers.values()]
            shared.savers.clear()
            shared.closed = True
        for manager in managers:
            manager.close()
        for stack in savers:
            stack.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
