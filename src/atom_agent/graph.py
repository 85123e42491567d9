"""Graph assembly: node names, routers, and `build_graph(resources)`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from atom_agent.context import Context
from atom_agent.nodes.common import exhausted_budget, within_budget
from atom_agent.nodes.executor import make_executor
from atom_agent.nodes.finish import make_finish
from atom_agent.nodes.flow import ask_user, make_approve_plan, make_start, select_step
from atom_agent.nodes.planner import make_planner, plain_written
from atom_agent.nodes.project import (
    make_project_executor,
    make_project_planner,
    make_project_reflector,
)
from atom_agent.nodes.reflector import make_reflector
from atom_agent.prompts import in_use
from atom_agent.resources import Resources
from atom_agent.state import InputState, State

logger = logging.getLogger(__name__)


def after_planner(state: State, ctx: Context) -> Literal["approve_plan", "select_step", "finish"]:
    """A failed planner ends the run; otherwise approval (if asked for) or the first step."""
    if state.get("status") == "failed" or not state.get("plan"):
        return "finish"
    if exhausted_budget(state, ctx):
        return "finish"
    return "approve_plan" if ctx.approve_plan else "select_step"


def after_approval(state: State) -> Literal["planner", "select_step"]:
    """Rejected or invalidly edited plans go back to the planner."""
    return "planner" if state.get("decision") == "replan" else "select_step"


def after_select(state: State, ctx: Context) -> Literal["executor", "finish"]:
    """Run the chosen step, or finish when none is left or a budget is spent."""
    if state.get("current_step") is None or exhausted_budget(state, ctx):
        return "finish"
    return "executor"


def after_executor(state: State) -> Literal["ask_user", "reflector", "finish"]:
    """A question goes to the user; else the reflector proves the attempt.

    Budgets are checked after the reflector, not here: the attempt's tokens are spent
    already, and judging it (and committing it if it passed) is what keeps them useful.
    Only an attempt a budget stopped midway (a model call refused) goes to finish.
    """
    if state.get("status") == "budget_exhausted":
        return "finish"
    return "ask_user" if state.get("question") else "reflector"


def after_reflector(
    state: State, ctx: Context
) -> Literal["executor", "planner", "select_step", "finish"]:
    """Retry, replan, or move on (committed or failed); a spent budget ends the run.

    A reflector a budget stopped before its witnesses' calls left no decision of its own.
    """
    if exhausted_budget(state, ctx):
        return "finish"
    decision = state.get("decision")
    if decision not in ("commit", "retry", "replan", "fail"):
        raise ValueError(f"reflector left an unknown decision: {decision!r}")
    if decision == "retry":
        return "executor"
    if decision == "replan":
        return "planner"
    return "select_step"


def build_graph(
    resources: Resources,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
) -> CompiledStateGraph[State, Context, InputState, State]:
    """The planner → executor → reflector graph over `resources`.

    The nodes close over `resources` (models, workspace, memory, sandbox runner) and read
    every setting from ``resources.ctx``; invoke the graph with that Context (or none). A
    graph is compiled per call (milliseconds); nothing is cached between calls. Building,
    compiling and reading its schemas write nothing and open nothing: the memory store and
    the sandbox runner are opened by the first node that uses them.

    Args:
        resources: what the run uses, built by the caller from its Context.
        checkpointer: persistence for resume and interrupts (the CLI uses SQLite in the
            workspace); None for LangGraph Server / Studio, which bring their own.
        store: a LangGraph store (e.g. atom_agent's Chroma store adapter), passed through.
    """
    ctx = resources.ctx
    resources.prompts.check()  # every sender is imported by now: the registry is complete
    # A run on a project (``ctx.repo``) has its own planner, executor and reflector: the same
    # flow over a checkout of the project instead of a new package (nodes/project/).
    on_project = bool(ctx.repo)
    planner = make_project_planner if on_project else make_planner
    executor = make_project_executor if on_project else make_executor
    reflector = make_project_reflector if on_project else make_reflector
    builder = StateGraph(State, context_schema=type(ctx), input_schema=InputState)
    # Each node reads the run's prompts (replacements, what was sent) while it runs.
    node = functools.partial(_node, resources)
    builder.add_node("start", node(make_start(resources)))
    # Every model call of these three is checked against the run's budgets before it is
    # made; a refused call ends the node cleanly and the run goes to finish.
    salvage = None if on_project else functools.partial(plain_written, resources)
    builder.add_node("planner", node(within_budget("planner", planner(resources), ctx, salvage)))
    builder.add_node("approve_plan", node(make_approve_plan(resources)))
    builder.add_node("select_step", select_step)
    builder.add_node("executor", node(within_budget("executor", executor(resources), ctx)))
    builder.add_node("ask_user", ask_user)
    builder.add_node("reflector", node(within_budget("reflector", reflector(resources), ctx)))
    builder.add_node("finish", node(make_finish(resources)))
    builder.add_edge(START, "start")
    builder.add_edge("start", "planner")
    builder.add_conditional_edges(
        "planner", _routed(after_planner, ctx), ["approve_plan", "select_step", "finish"]
    )
    builder.add_conditional_edges("approve_plan", after_approval)
    builder.add_conditional_edges("select_step", _routed(after_select, ctx), ["executor", "finish"])
    builder.add_conditional_edges("executor", after_executor, ["ask_user", "reflector", "finish"])
    builder.add_edge("ask_user", "executor")
    builder.add_conditional_edges(
        "reflector",
        _routed(after_reflector, ctx),
        ["executor", "planner", "select_step", "finish"],
    )
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=checkpointer, store=store, name="atom_agent")


def _routed(router: Callable[[State, Context], str], ctx: Context) -> Callable[[State], str]:
    """`router` with the run's Context bound (its destinations are given beside it)."""

    def route(state: State) -> str:
        return router(state, ctx)

    route.__name__ = router.__name__
    return route


def _node(res: Resources, node: Callable[..., Any]) -> Callable[..., Any]:
    """`node` reading the run's prompts while it runs (:func:`atom_agent.prompts.prompt_text`).

    A context variable, so a sender deep in a check or a tool needs no Context to read its
    prompt; LangGraph runs each node, and each tool, in a copy of the caller's context. The
    result is :func:`_unprobed`.
    """

    @functools.wraps(node)
    def run(*args: Any, **kwargs: Any) -> Any:
        with in_use(res.prompts):
            return node(*args, **kwargs)

    return _unprobed(run)


def _unprobed(node: Callable[..., Any]) -> Callable[..., Any]:
    """`node` as a callable whose closure LangGraph's compile does not read.

    To find subgraphs, ``compile()`` walks each node function's bytecode and reads every
    attribute chain it loads from its closure: ``res.memory.apply`` in a node body becomes
    ``getattr(res, "memory")`` at compile time, and ``Resources.memory`` / ``.runner`` open the
    memory store and the sandbox runner on first read, so building a graph (or a server's
    schema read) would create ``memory/chroma.sqlite3``. The probe reads plain functions
    only; a ``partial`` keeps the signature LangGraph injects ``runtime`` from. No node holds
    a subgraph LangGraph could find (the executor compiles its agent on first use), so the
    probe finds nothing it did before (tests/unit/graph/test_build_opens_nothing.py).
    """
    return functools.partial(node)
