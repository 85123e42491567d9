"""Finish node: the run's outcome, run.json, report.md, working memory promoted."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from atom_agent.context import Context
from atom_agent.errors import AtomAgentError
from atom_agent.memory import WorkingMemory
from atom_agent.report import criteria_summary, render_report
from atom_agent.services import Models
from atom_agent.session import SessionContext
from atom_agent.state import Plan, RunStatus, State
from atom_agent.telemetry import emit
from atom_agent.workspace.deliverable import build_deliverable, deliverable_markdown

from .common import exhausted_budget, run_ref, services

logger = logging.getLogger(__name__)


def make_finish(models: Models | None) -> Any:
    """The finish node, closed over the model override of `build_graph`."""

    def finish(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        svc = services(runtime, models)
        ctx = svc.ctx
        run = run_ref(svc, state)
        statuses = dict(state.get("step_status") or {})
        status: RunStatus = state.get("status", "running")
        reason = state.get("stop_reason", "")
        budget = exhausted_budget(state, ctx)
        if status not in ("failed", "rejected"):  # else the planner already said why
            status, reason = _outcome(statuses, budget, reason)
        verification = _verification(svc, run, statuses)
        if verification:
            # What the outcome rests on: executed checks, or only a model's opinion.
            reason += f" (criteria of committed steps: {verification})"
        promoted = _promote(svc, state)
        final = {**state, "status": status, "stop_reason": reason}
        final["memories_written"] = [*(state.get("memories_written") or []), *promoted]
        started = state.get("started_at") or time.time()
        deliverable = _deliverable(svc, run, state, statuses)
        svc.workspace.update_run(
            run,
            status=status,
            stop_reason=reason,
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            duration_s=round(time.time() - started, 2),
            usage=dict(state.get("usage") or {}),
            steps=statuses,
            verification=verification,
            deliverable=deliverable,
        )
        markdown = render_report(svc.workspace, run, final)
        markdown += "\n" + deliverable_markdown(deliverable, state["run_id"])
        report = svc.workspace.write_report(run, markdown.rstrip("\n") + "\n")
        result = deliverable["path"] if deliverable else None
        emit("run.finish", run_id=state["run_id"], status=status, reason=reason, report=str(report),
             result=result)  # fmt: skip
        return {
            "status": status,
            "stop_reason": reason,
            "memories_written": promoted,
            "report_path": str(report),
            "result_dir": result,
        }

    return finish


def _deliverable(
    svc: Any, run: Any, state: State, statuses: Mapping[str, str]
) -> dict[str, Any] | None:
    """``result/``: the committed steps as one package, its tests run once more.

    None when nothing was committed.
    """
    if not state.get("plan") or "committed" not in statuses.values():
        return None
    plan = Plan.model_validate(state["plan"])
    return build_deliverable(svc.workspace, run, plan, statuses, task=state.get("task") or "",
                             runner=svc.runner, limits=svc.limits)  # fmt: skip


def _verification(svc: Any, run: Any, statuses: Mapping[str, str]) -> str:
    """``3 verified, 1 judged`` over the committed steps' final verdicts ('' if none)."""
    criteria: list[dict[str, Any]] = []
    for step_id, status in statuses.items():
        if status != "committed":
            continue
        try:
            attempts = svc.workspace.list_attempts(svc.workspace.step(run, step_id))
        except AtomAgentError:
            continue
        if attempts and attempts[-1].verdict_json.exists():
            criteria += svc.workspace.read_verdict(attempts[-1]).get("criteria") or []
    return criteria_summary(criteria) if criteria else ""


def _outcome(statuses: Mapping[str, str], budget: str | None, reason: str) -> tuple[RunStatus, str]:
    """The run's final status and reason from its steps and budgets."""
    if budget is not None and any(s == "pending" for s in statuses.values()):
        return "budget_exhausted", budget
    if statuses and all(s == "committed" for s in statuses.values()):
        return "done", f"all {len(statuses)} steps committed"
    failed = sorted(k for k, v in statuses.items() if v in ("failed", "blocked"))
    return "failed", reason or f"steps not committed: {', '.join(failed) or 'none run'}"


def _promote(svc: Any, state: State) -> list[str]:
    """Promote working-memory candidates at or above the threshold; returns the new ids."""
    candidates = state.get("candidates") or []
    if not candidates:
        return []
    session = SessionContext(
        session_id=state["run_id"], project_id=svc.ctx.project_id, run_id=state["run_id"]
    )
    working = WorkingMemory(session)
    for c in candidates:
        working.note(c["content"], type=c.get("type", "lesson_learned"), importance=c["importance"])
    try:
        records = svc.memory.promote(session, working, threshold=svc.ctx.memory_promotion_threshold)
    except AtomAgentError as exc:
        logger.warning("promotion of working memory failed: %s", exc)
        return []
    return [r.id for r in records]
