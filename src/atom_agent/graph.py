"""Graph assembly: node names, routers, `build_graph()`, and the module-level `graph`."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from atom_agent.context import Context
from atom_agent.errors import ConfigError
from atom_agent.nodes.common import context_of, exhausted_budget
from atom_agent.nodes.executor import make_executor
from atom_agent.nodes.finish import make_finish
from atom_agent.nodes.flow import approve_plan, ask_user, make_start, select_step
from atom_agent.nodes.planner import make_planner
from atom_agent.nodes.reflector import make_reflector
from atom_agent.services import Models, models_from_factory
from atom_agent.state import InputState, State

logger = logging.getLogger(__name__)

_ctx = context_of


def after_planner(
    state: State, runtime: Runtime[Context]
) -> Literal["approve_plan", "select_step", "finish"]:
    """A failed planner ends the run; otherwise approval (if asked for) or the first step."""
    if state.get("status") == "failed" or not state.get("plan"):
        return "finish"
    if exhausted_budget(state, _ctx(runtime)):
        return "finish"
    return "approve_plan" if _ctx(runtime).approve_plan else "select_step"


def after_approval(state: State) -> Literal["planner", "select_step"]:
    """Rejected or invalidly edited plans go back to the planner."""
    return "planner" if state.get("decision") == "replan" else "select_step"


def after_select(state: State, runtime: Runtime[Context]) -> Literal["executor", "finish"]:
    """Run the chosen step, or finish when none is left or a budget is spent."""
    if state.get("current_step") is None or exhausted_budget(state, _ctx(runtime)):
        return "finish"
    return "executor"


def after_executor(state: State) -> Literal["ask_user", "reflector"]:
    """A question goes to the user; else the reflector judges the attempt.

    Budgets are checked after the reflector, not here: the attempt's tokens are spent
    already, and judging it (and committing it if it passed) is what keeps them useful.
    """
    return "ask_user" if state.get("question") else "reflector"


def after_reflector(
    state: State, runtime: Runtime[Context]
) -> Literal["executor", "planner", "select_step", "finish"]:
    """Retry, replan, or move on (committed or failed); a spent budget ends the run."""
    decision = state.get("decision")
    if decision not in ("commit", "retry", "replan", "fail"):
        raise ValueError(f"reflector left an unknown decision: {decision!r}")
    if exhausted_budget(state, _ctx(runtime)):
        return "finish"
    if decision == "retry":
        return "executor"
    if decision == "replan":
        return "planner"
    return "select_step"


def build_graph(
    *,
    models: Models | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
) -> CompiledStateGraph[State, Context, InputState, State]:
    """The planner → executor → reflector graph.

    Compiled once per `models` object in a process; each call returns its own copy with the
    given persistence (compiling takes milliseconds, a copy microseconds).

    Args:
        models: one chat model for every role, or ``{"planner": …, "executor": …,
            "reflector": …}``; roles not given are loaded from the Context's model specs.
        checkpointer: persistence for resume and interrupts (the CLI uses SQLite in the
            workspace); None for LangGraph Server / Studio, which bring their own.
        store: a LangGraph store (e.g. atom_agent's Chroma store adapter), passed through.
    """
    base = _compiled(models)
    graph = base.copy(update={"checkpointer": checkpointer, "store": store})
    # `copy` rebuilds the graph from its public fields and drops the serde allowlist that
    # compile() derives from the schemas (used with LANGGRAPH_STRICT_MSGPACK): carry it over.
    graph._serde_allowlist = base._serde_allowlist
    return graph


GRAPHS_KEPT = 16
"""Compiled graphs kept per process, one per models object (least recently used dropped)."""

_GRAPHS: OrderedDict[int, tuple[Models | None, CompiledStateGraph[Any, Any, Any, Any]]] = (
    OrderedDict()
)
_GRAPHS_LOCK = threading.Lock()


def _compiled(models: Models | None) -> CompiledStateGraph[State, Context, InputState, State]:
    """The graph for `models` without persistence, compiled on first use.

    Keyed by the models object's id; the entry holds the object, so its id is not reused.
    """
    key = id(models)
    with _GRAPHS_LOCK:
        found = _GRAPHS.get(key)
        if found is not None:
            _GRAPHS.move_to_end(key)
            return found[1]
    compiled = _compile(models)
    with _GRAPHS_LOCK:
        _GRAPHS.setdefault(key, (models, compiled))
        _GRAPHS.move_to_end(key)
        while len(_GRAPHS) > GRAPHS_KEPT:
            _GRAPHS.popitem(last=False)
        return _GRAPHS[key][1]


def _compile(models: Models | None) -> CompiledStateGraph[State, Context, InputState, State]:
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    builder.add_node("start", make_start(models))
    builder.add_node("planner", make_planner(models))
    builder.add_node("approve_plan", approve_plan)
    builder.add_node("select_step", select_step)
    builder.add_node("executor", make_executor(models))
    builder.add_node("ask_user", ask_user)
    builder.add_node("reflector", make_reflector(models))
    builder.add_node("finish", make_finish(models))
    builder.add_edge(START, "start")
    builder.add_edge("start", "planner")
    builder.add_conditional_edges("planner", after_planner)
    builder.add_conditional_edges("approve_plan", after_approval)
    builder.add_conditional_edges("select_step", after_select)
    builder.add_conditional_edges("executor", after_executor)
    builder.add_edge("ask_user", "executor")
    builder.add_conditional_edges("reflector", after_reflector)
    builder.add_edge("finish", END)
    return builder.compile(name="atom_agent")


def _served_context() -> type[Context]:
    """The server's context schema, with the ``ATOM_*`` environment as its defaults.

    A bad ``ATOM_*`` value must not break importing this module (the CLI imports it): the
    schema keeps the built-in defaults, and the error is raised when a run builds its Context.
    """
    try:
        return Context.with_env_defaults()
    except ConfigError as exc:
        logger.debug("%s; the served graph keeps the built-in defaults", exc)
        return Context


graph = build_graph(models=models_from_factory())
graph.context_schema = _served_context()
"""The graph for `langgraph.json` (LangGraph Server / Studio bring their own persistence).

Models come from each run's Context; ``ATOM_MODELS_FACTORY=module:callable`` overrides them
for the whole server (custom clients, scripted models in tests). Its context schema takes
the server's ``ATOM_*`` environment as defaults, read once here: a field a client sends
always wins over it."""
