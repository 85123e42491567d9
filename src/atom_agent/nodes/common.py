"""Helpers the nodes share: budgets, run bookkeeping, an attempt's scope."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atom_agent.budget import RunBudget, now, watching
from atom_agent.context import Context
from atom_agent.errors import BudgetExhaustedError
from atom_agent.models.ledger import CallLedger, recording
from atom_agent.names import defined_in_code
from atom_agent.resources import Resources
from atom_agent.session import SessionContext
from atom_agent.state import IMPL_FILE, Plan, State
from atom_agent.telemetry import emit
from atom_agent.tools.scope import ToolScope
from atom_agent.workspace import AttemptRef, RunRef, StepRef, Workspace

logger = logging.getLogger(__name__)


def available_names(artifacts: dict[str, Path]) -> list[str]:
    """Public names the dependencies' committed impl.py files define (a check may use them)."""
    names: list[str] = []
    for path in artifacts.values():
        impl = path / IMPL_FILE
        if impl.is_file():
            names += defined_in_code(impl.read_text(errors="replace"))
    return names


def run_ref(res: Resources, state: State) -> RunRef:
    """The run directory of this run."""
    return res.workspace.run(state["run_id"])


def step_session(state: State, ctx: Context, step_id: str, attempt: int) -> SessionContext:
    """The memory/tool session of one attempt: the run is the session, the step its provenance."""
    return SessionContext(
        session_id=state["run_id"],
        project_id=ctx.project_id,
        run_id=state["run_id"],
        step_id=step_id,
        attempt=attempt,
    )


def unfinished_attempt(workspace: Workspace, step_ref: StepRef) -> AttemptRef | None:
    """The step's latest attempt if it never got a verdict (its process died): reuse it."""
    attempts = workspace.list_attempts(step_ref)
    if attempts and not attempts[-1].verdict_json.exists():
        return attempts[-1]
    return None


def plan_of(state: State) -> Plan:
    """The current plan (it must exist)."""
    raw = state.get("plan")
    if not raw:
        raise RuntimeError("no plan in state: the planner must run first")
    return Plan.model_validate(raw)


def run_budget(state: State, ctx: Context) -> RunBudget | None:
    """The run's budgets and what it has spent so far (None when it has no budget)."""
    limit = time_limit(state, ctx)
    started = state.get("started_at")
    budget = RunBudget(
        max_tokens=ctx.max_tokens,
        max_cost_usd=ctx.max_cost_usd,
        max_wall_seconds=ctx.max_wall_seconds,
        started_at=started,
        used=state.get("usage") or {},
        calls_until=None if limit is None or started is None else started + limit[0],
        calls_until_why=limit[1] if limit is not None else "",
    )
    return budget if budget.limited else None


MIN_STEP_SECONDS = 30.0
"""The least time :func:`time_limit` gives a step: a fast model's calls take seconds each."""


def time_limit(state: State, ctx: Context) -> tuple[float, str] | None:
    """The run's time limit relative to its plain answer (seconds, described), or None.

    ``run_time_factor`` × the plain answer's seconds for each step of the plan (one before
    there is a plan), at least :data:`MIN_STEP_SECONDS` a step. None when the factor is 0 or
    the plain answer's cost is not known: not asked in this run, or answered in under a
    second (a replayed or scripted call costs nothing real to compare with).
    """
    plain = state.get("plain_seconds") or 0.0
    if not ctx.run_time_factor or plain < 1.0:
        return None
    steps = len((state.get("plan") or {}).get("steps") or ()) or 1
    seconds = steps * max(ctx.run_time_factor * plain, MIN_STEP_SECONDS)
    why = f"{ctx.run_time_factor:g} x the plain answer's {plain:.1f}s for each of {steps} step(s)"
    return seconds, why


def seconds_left(state: State, ctx: Context) -> float | None:
    """What the run's time limit leaves for model calls, now (None: the run has no limit)."""
    limit, started = time_limit(state, ctx), state.get("started_at")
    return None if limit is None or started is None else started + limit[0] - now()


def exhausted_budget(state: State, ctx: Context) -> str | None:
    """The budget this run has used up, described, or None.

    A node that a budget stopped (:func:`within_budget`) left the run ``budget_exhausted``
    with its reason; otherwise the state's usage and the clock say. The time limit is not
    asked here: it refuses model calls, not the steps after it that need none (candidate zero
    proven and committed on its checks alone).
    """
    if state.get("status") == "budget_exhausted":
        return state.get("stop_reason") or "budget exhausted"
    budget = run_budget(state, ctx)
    return budget.exhausted(calls=False) if budget is not None else None


Node = Callable[[State], dict[str, Any]]


def within_budget(
    name: str, node: Node, ctx: Context, salvage: Callable[[State], dict[str, Any]] | None = None
) -> Node:
    """`node`, ended cleanly at the first model call the run's budget does not allow.

    Its model calls are counted by purpose too (:class:`~atom_agent.models.ledger.CallLedger`:
    the update's ``calls``).

    Every model call made while the node runs is checked against the run's budgets before it
    is made, and counted after (:class:`~atom_agent.budget.RunBudget`). A call the budget
    refuses ends the node: its update is the run ``budget_exhausted`` with the reason and the
    figures, the usage of the calls it made, and what `salvage` keeps of its work (the
    planner's plain answer). What earlier nodes committed stays; the routers go to finish.
    """

    def budgeted(state: State) -> dict[str, Any]:
        ledger = CallLedger()
        with recording(ledger):
            update = within(state)
        return {**update, "calls": ledger.rows} if ledger.rows else update

    def within(state: State) -> dict[str, Any]:
        budget = run_budget(state, ctx)
        if budget is None:
            return node(state)
        try:
            with watching(budget):
                return node(state)
        except BudgetExhaustedError as exc:
            where = (
                "stopped there" if exc.reply is not None else "stopped before its next model call"
            )
            reason = f"{exc.reason} (the {name} {where})"
            logger.info("run %s: %s", state.get("run_id"), reason)
            emit("run.budget", run_id=state.get("run_id"), node=name, reason=exc.reason,
                 **budget.figures())  # fmt: skip
            kept = salvage(state) if salvage is not None else {}
            return {
                **kept,
                "status": "budget_exhausted",
                "stop_reason": reason,
                "usage": dict(budget.spent),
            }

    budgeted.__name__ = getattr(node, "__name__", name)
    return budgeted


def dependants(plan: Plan, step_id: str) -> set[str]:
    """Every step that depends on `step_id`, directly or not."""
    found: set[str] = set()
    frontier = {step_id}
    while frontier:
        nxt = {s.id for s in plan.steps if set(s.depends_on) & frontier and s.id not in found}
        found |= nxt
        frontier = nxt
    return found


def python_ident(step_id: str) -> str:
    """The package name a step's committed code is imported under: ``deps.<ident>``."""
    ident = step_id.replace("-", "_")
    return f"s_{ident}" if ident[0].isdigit() else ident


@dataclass(frozen=True)
class AttemptScope(ToolScope):
    """A ToolScope whose sandboxed runs import dependencies as ``deps.<step>.<module>``.

    Every step writes an ``impl.py``, so dependencies cannot be imported as ``impl`` next to
    the step's own; a small ``deps`` package of symlinks to their committed artifacts (in the
    attempt directory, outside staging) gives each one its own name.
    """

    package_root: Path | None = None

    def python_path(self) -> list[Path]:
        """Staging first, then the directory holding the ``deps`` package."""
        return [self.staging, *([self.package_root] if self.package_root else [])]

    def describe(self) -> str:
        """ToolScope's description plus how to import dependency code."""
        text = super().describe()
        if self.dependencies:
            names = ", ".join(
                f"from deps.{python_ident(d)}.impl import …" for d in self.dependencies
            )
            text += f"\nImport dependency code in your files like this: {names}"
        return text


def attempt_scope(workspace: Workspace, step: StepRef, attempt: AttemptRef) -> AttemptScope:
    """The scope of an attempt, with its ``deps`` package built (idempotent)."""
    base = ToolScope.for_attempt(workspace, step, attempt)
    root: Path | None = None
    if base.dependencies:
        root = attempt.path / "pythonpath"
        package = root / "deps"
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text('"""Committed code of dependency steps."""\n')
        for dep_id, artifacts in base.dependencies.items():
            link = package / python_ident(dep_id)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(Path(artifacts).resolve(), target_is_directory=True)
    return AttemptScope(
        staging=base.staging,
        dependencies=base.dependencies,
        package_root=root,
    )
