"""Helpers the nodes share: budgets, run bookkeeping, an attempt's scope."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from atom_agent.checks.names import defined_in_code
from atom_agent.context import Context
from atom_agent.resources import Resources
from atom_agent.session import SessionContext
from atom_agent.state import IMPL_FILE, Plan, State
from atom_agent.tools.scope import ToolScope
from atom_agent.workspace import AttemptRef, RunRef, StepRef, Workspace


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
