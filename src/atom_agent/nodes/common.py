"""Helpers the nodes share: services from the runtime, budgets, run bookkeeping."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from atom_agent.context import Context
from atom_agent.services import Models, Services, services_for
from atom_agent.state import Plan, State
from atom_agent.workspace import RunRef


def services(runtime: Runtime[Context], models: Models | None) -> Services:
    """Services for this run's Context (a default Context when the caller gave none)."""
    ctx = runtime.context if isinstance(runtime.context, Context) else Context()
    return services_for(ctx, models)


def run_ref(svc: Services, state: State) -> RunRef:
    """The run directory of this run."""
    return svc.workspace.run(state["run_id"])


def plan_of(state: State) -> Plan:
    """The current plan (it must exist)."""
    raw = state.get("plan")
    if not raw:
        raise RuntimeError("no plan in state: the planner must run first")
    return Plan.model_validate(raw)


def exhausted_budget(state: State, ctx: Context) -> str | None:
    """The budget this run has used up, described, or None."""
    usage = state.get("usage") or {}
    if ctx.max_tokens is not None and usage.get("total_tokens", 0) >= ctx.max_tokens:
        return f"token budget: {int(usage['total_tokens'])} of {ctx.max_tokens} tokens used"
    if ctx.max_cost_usd is not None and usage.get("cost_usd", 0.0) >= ctx.max_cost_usd:
        return f"cost budget: ${usage['cost_usd']:.4f} of ${ctx.max_cost_usd:.4f} spent"
    started = state.get("started_at")
    if ctx.max_wall_seconds is not None and started is not None:
        elapsed = time.time() - started
        if elapsed >= ctx.max_wall_seconds:
            return f"wall-clock budget: {elapsed:.1f}s of {ctx.max_wall_seconds:.1f}s elapsed"
    return None


def dependants(plan: Plan, step_id: str) -> set[str]:
    """Every step that depends on `step_id`, directly or not."""
    found: set[str] = set()
    frontier = {step_id}
    while frontier:
        nxt = {s.id for s in plan.steps if set(s.depends_on) & frontier and s.id not in found}
        found |= nxt
        frontier = nxt
    return found


def outline(plan: Plan, statuses: dict[str, Any] | None = None) -> str:
    """One line per step, for prompts."""
    lines = []
    for s in plan.steps:
        deps = f" (after {', '.join(s.depends_on)})" if s.depends_on else ""
        status = f" [{statuses[s.id]}]" if statuses and s.id in statuses else ""
        lines.append(f"- {s.id}: {s.title}{deps}{status}")
    return "\n".join(lines)
