"""What the nodes use, built once per process from a Context: models, workspace, memory, sandbox."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from atom_agent.context import Context
from atom_agent.errors import ConfigError
from atom_agent.memory import MemoryManager
from atom_agent.models import load_chat_model, resolve_default_model
from atom_agent.sandbox import Limits, SandboxRunner, SubprocessRunner
from atom_agent.workspace import Workspace

logger = logging.getLogger(__name__)

ROLES = ("planner", "executor", "reflector")

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
    """

    def __init__(self, ctx: Context, models: Models | None = None) -> None:
        self.ctx = ctx
        self._models = models
        self._loaded: dict[str, BaseChatModel] = {}
        self._memory: MemoryManager | None = None
        self._lock = threading.Lock()
        self.workspace = Workspace(Path(ctx.workspace).expanduser())
        self.runner: SandboxRunner = SubprocessRunner()
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
        """The long-term memory manager (opened on first use)."""
        with self._lock:
            if self._memory is None:
                self._memory = MemoryManager.from_context(self.ctx)
            return self._memory

    def close(self) -> None:
        """Close the memory store."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None


_CACHE: dict[tuple[Context, int], Services] = {}
_CACHE_LOCK = threading.Lock()


def services_for(ctx: Context, models: Models | None = None) -> Services:
    """The process-wide Services of (`ctx`, `models`), built on first use."""
    key = (ctx, id(models))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = Services(ctx, models)
        return _CACHE[key]


def close_all() -> None:
    """Close every cached Services (CLI exit, tests)."""
    with _CACHE_LOCK:
        for services in _CACHE.values():
            services.close()
        _CACHE.clear()
