"""Finish node: the run's outcome, run.json, report.md, working memory promoted."""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from atom_agent.budget import now
from atom_agent.checks.contract import SHAPE_CRITERIA
from atom_agent.checks.exercised import not_exercised
from atom_agent.errors import AtomAgentError
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.learning import promote_once, record_decisions
from atom_agent.memory.relevance import read_recalled
from atom_agent.project.handback import hand_back, hand_back_markdown
from atom_agent.report import check_report, criteria_summary, render_report, shown_criteria
from atom_agent.resources import Resources
from atom_agent.selection.candidates import floor, meets_clauses
from atom_agent.session import SessionContext
from atom_agent.state import Plan, RunStatus, State
from atom_agent.telemetry import emit
from atom_agent.verification.clauses import SIGNATURE_PASSED, Coverage, coverage, task_clauses
from atom_agent.workspace import RunRef, Workspace
from atom_agent.workspace.deliverable import (
    build_deliverable,
    deliverable_markdown,
    plain_deliverable,
)

from .common import exhausted_budget, run_budget, run_ref
from .planner import task_names
from .project.common import load_project
from .rules import answered_rules, rules_applied

logger = logging.getLogger(__name__)


def make_finish(res: Resources) -> Any:
    """The finish node, closed over the run's resources."""

    def finish(state: State) -> dict[str, Any]:
        run = run_ref(res, state)
        statuses = dict(state.get("step_status") or {})
        budget = exhausted_budget(state, res.ctx)
        deliverable, promoted = _deliver_and_learn(res, run, state, statuses)
        deliverable, floor_note = _floor(res, run, state, deliverable)
        status, reason = _final_outcome(state, statuses, budget, deliverable, floor_note)
        deliverable, reason = _plain_if_empty(run, state, status, reason, deliverable)
        verification = _verification(res, run, statuses)
        clauses = clause_coverage(res.workspace, run, state.get("plan"), statuses)
        if deliverable is not None and deliverable.get("unverified"):
            clauses = plain_coverage(res, run, state) or clauses
        reason += _evidence_notes(verification, deliverable, clauses)
        final = _final_state(res, run, state, statuses, status, reason, budget, promoted)
        _record_run(res, run, final, statuses, verification, clauses, deliverable)
        report = _write_report(res, run, final, deliverable)
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


def _deliver_and_learn(
    res: Resources, run: RunRef, state: State, statuses: Mapping[str, str]
) -> tuple[dict[str, Any] | None, list[str]]:
    """The result package and the ids of the memories promoted, from two concurrent jobs."""
    # Two independent jobs: the memory write (embedding, Chroma) runs while the
    # deliverable's tests run in their sandbox process.
    with ThreadPoolExecutor(1, thread_name_prefix="atom-learn") as pool:
        learning = pool.submit(contextvars.copy_context().run, _learn, res, state)
        try:
            deliverable = _deliverable(res, run, state, statuses)
        finally:
            promoted = learning.result()  # waits; re-raises what the write raised
    return deliverable, promoted


def _final_outcome(
    state: State,
    statuses: Mapping[str, str],
    budget: str | None,
    deliverable: Mapping[str, Any] | None,
    floor_note: str,
) -> tuple[RunStatus, str]:
    """The run's status and reason, from its steps, budgets, package and floor."""
    status: RunStatus = state.get("status", "running")
    reason = state.get("stop_reason", "")
    if status not in ("failed", "rejected"):  # else the planner already said why
        status, reason = _outcome(statuses, budget, reason)
        status, reason = package_outcome(status, reason, deliverable)
    if floor_note:
        # What the run hands back is the plain answer: nothing handed back is verified.
        status = "failed" if status == "done" else status
        reason += floor_note
    return status, reason


def _plain_if_empty(
    run: RunRef, state: State, status: RunStatus, reason: str, deliverable: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """The result package, else the plain answer labelled unverified; the reason that says so."""
    if deliverable is None and state.get("plain") and status != "rejected":
        # Nothing committed: the user still gets what one plain call gave, labelled.
        why = f"the run ended {status}: {reason[:300]}"
        deliverable = plain_deliverable(run, str(state["plain"]), why)
        reason += "; result/ holds the model's plain answer, unverified"
    return deliverable, reason


def _evidence_notes(
    verification: str, deliverable: Mapping[str, Any] | None, clauses: Coverage
) -> str:
    """The evidence behind the outcome, appended to its reason ('' when there is none)."""
    notes = ""
    if verification:
        # What the outcome rests on: executed checks, or only a model's opinion.
        notes += f" (criteria of committed steps: {verification})"
    unproven = [
        f"{s['step']} ({s['reason']})"
        for s in ((deliverable or {}).get("steps") or [])
        if s["status"] == "committed" and not s["verified"]
    ]
    if unproven:  # a run on a project: committed without every check holding
        notes += "; committed unverified: " + "; ".join(unproven)
    if clauses.total:
        notes += f"; {clauses.summary()}"
    return notes


def _final_state(
    res: Resources,
    run: RunRef,
    state: State,
    statuses: Mapping[str, str],
    status: RunStatus,
    reason: str,
    budget: str | None,
    promoted: list[str],
) -> dict[str, Any]:
    """The state the report renders: the outcome, budget figures, the memories written."""
    final: dict[str, Any] = {**state, "status": status, "stop_reason": reason}
    limits = run_budget(state, res.ctx)
    if limits is not None:  # the run's budgets beside what it used; the one that ended it
        exhausted = {"exhausted": budget} if budget and status == "budget_exhausted" else {}
        final["budget"] = {**limits.figures(), **exhausted}
    written = [*(state.get("memories_written") or []), *promoted]
    final["memories_written"] = written
    final["memories"] = memory_notes(res, run, statuses, written)
    return final


def _record_run(
    res: Resources,
    run: RunRef,
    final: Mapping[str, Any],
    statuses: Mapping[str, str],
    verification: str,
    clauses: Coverage,
    deliverable: dict[str, Any] | None,
) -> None:
    """run.json: the outcome, its timing, budgets, usage, steps, evidence and result."""
    started = final.get("started_at") or now()
    res.workspace.update_run(
        run,
        status=final["status"],
        stop_reason=final["stop_reason"],
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        duration_s=round(now() - started, 2),
        **({"budget": final["budget"]} if "budget" in final else {}),
        usage=dict(final.get("usage") or {}),
        calls=dict(final.get("calls") or {}),
        steps=statuses,
        verification=verification,
        clauses={"summary": clauses.summary(), **clauses.to_dict()},
        memories=final["memories"],
        deliverable=deliverable,
        # Only the replacements this run sent: a profile that never sends one did not use it.
        **(
            {
                "prompts_replaced": res.prompts.replaced_and_sent(),
                "prompts_unsent": res.prompts.replaced_unsent(),
            }
            if res.prompts.replaced
            else {}
        ),
    )
    info = res.workspace.read_run(run).get("rules")
    if isinstance(info, dict) and (info.get("carried") or info.get("stated")):
        res.workspace.update_run(run, rules={**info, "applied": rules_applied(info, clauses)})


def _write_report(
    res: Resources, run: RunRef, final: dict[str, Any], deliverable: dict[str, Any] | None
) -> Path:
    """report.md: the run's report, then what it hands back (a package or a branch)."""
    markdown = render_report(res.workspace, run, final)
    markdown += "\n" + (
        hand_back_markdown(deliverable, final["run_id"])
        if deliverable and deliverable.get("kind") == "project"
        else deliverable_markdown(deliverable, final["run_id"])
    )
    return res.workspace.write_report(run, markdown.rstrip("\n") + "\n")


def _deliverable(
    res: Resources, run: RunRef, state: State, statuses: Mapping[str, str]
) -> dict[str, Any] | None:
    """``result/``: the committed steps as one package, its tests run once more.

    None when nothing was committed.
    """
    if res.ctx.repo:
        return _project_result(res, run, statuses)
    if not state.get("plan") or "committed" not in statuses.values():
        return None
    plan = Plan.model_validate(state["plan"])
    return build_deliverable(res.workspace, run, plan, statuses, task=state.get("task") or "",
                             runner=res.runner, limits=res.limits)  # fmt: skip


def _floor(
    res: Resources, run: RunRef, state: State, deliverable: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """The result package, or the plain answer when it executes better on the task's checks.

    Returns the deliverable and the note for the outcome ('' when the package stays).
    """
    plain = str(state.get("plain") or "")
    if deliverable is None or res.ctx.repo or not plain.strip() or deliverable.get("unverified"):
        return deliverable, ""
    task = state.get("task") or ""
    names = task_names(task)
    found = floor(
        plain, Path(deliverable["path"]), str(deliverable["package"]),
        task_clauses(task, names=names), folder=res.workspace.plain_dir(run) / "floor",
        runner=res.runner, limits=res.limits, defines=names,
    )  # fmt: skip
    if found.package is None:
        return deliverable, ""
    emit("run.floor", run_id=state["run_id"], plain_wins=found.plain_wins, why=found.summary())
    if not found.plain_wins:
        return deliverable, ""
    why = found.summary()
    note = f"; result/ holds the model's plain answer instead, unverified: {why}"
    return plain_deliverable(run, plain, why, committed=True), note


def _project_result(
    res: Resources, run: RunRef, statuses: Mapping[str, str]
) -> dict[str, Any] | None:
    """A run on a project: its branch, the patch, the suite before and after (None if unopened)."""
    project = load_project(res, run)
    if project is None:
        return None
    last = None
    for _, verdict in final_verdicts(res.workspace, run, statuses):
        last = verdict.get("suite") or last
    before = {"passed": len(project.baseline.passed), "failed": len(project.baseline.failed)}
    summary = hand_back(project.checkout, run.path, before, last)
    summary["steps"] = list(_step_verdicts(res.workspace, run, statuses))
    # The run is over (finish is its last node: nothing resumes after it), so the branch is
    # handed to the user: git checks a branch out in one worktree only.
    if project.checkout.release() or project.checkout.released:
        summary["worktree"] = None
    return summary


def _step_verdicts(
    workspace: Workspace, run: RunRef, statuses: Mapping[str, str]
) -> Iterator[dict[str, Any]]:
    """Each step's status and its last verdict's decision, label and reason."""
    for step_id, status in statuses.items():
        try:
            attempts = workspace.list_attempts(workspace.step(run, step_id))
        except AtomAgentError:
            attempts = []
        verdict = (
            workspace.read_verdict(attempts[-1])
            if attempts and attempts[-1].verdict_json.exists()
            else {}
        )
        yield {
            "step": step_id,
            "status": status,
            "attempts": len(attempts),
            "verified": bool(verdict.get("verified")),
            "checks": (verdict.get("checks") or {}).get("summary", "no checks"),
            "reason": str(verdict.get("reason") or ""),
            "commit": verdict.get("commit"),
        }


def final_verdicts(
    workspace: Workspace, run: RunRef, statuses: Mapping[str, str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(step id, verdict) of each committed step's last attempt, in step order."""
    for step_id, status in statuses.items():
        if status != "committed":
            continue
        try:
            attempts = workspace.list_attempts(workspace.step(run, step_id))
        except AtomAgentError:
            continue
        if attempts and attempts[-1].verdict_json.exists():
            yield step_id, workspace.read_verdict(attempts[-1])


def package_outcome(
    status: RunStatus, reason: str, deliverable: Mapping[str, Any] | None
) -> tuple[RunStatus, str]:
    """A run is done only when the result package's tests pass too.

    Every step committed, yet the package's gathered tests fail together (two steps' tests
    that conflict, a module name that shadows another): the run failed, and says which.
    """
    tests = (deliverable or {}).get("tests")
    if status != "done" or not tests or tests.get("ok"):
        return status, reason
    if "error" in tests:
        return "failed", f"{reason}, but the result package's tests could not run: {tests['error']}"
    failing = list(tests.get("failing") or [])
    named = ", ".join(failing[:5]) + (f" (+{len(failing) - 5} more)" if len(failing) > 5 else "")
    counts = (
        f"{tests.get('failed', 0)} failed, {tests.get('errors', 0)} errors "
        f"(exit {tests.get('exit_code')})"
    )
    return "failed", f"{reason}, but the result package's tests fail: {named or counts}"


def _verification(res: Resources, run: RunRef, statuses: Mapping[str, str]) -> str:
    """``3 verified, 1 unverified`` over the committed steps' final verdicts ('' if none).

    Criteria of a step whose verdict is not verified (a clause without a check, a name no
    result check ran, a commit on the task's checks only) count as *held*, never verified.
    Then the defined names of which no executed check or passing test checked a result, and
    the steps committed on the task's checks only.
    """
    criteria: list[dict[str, Any]] = []
    idle: list[str] = []
    on_task: list[str] = []
    over: list[str] = []
    for step_id, verdict in final_verdicts(res.workspace, run, statuses):
        over += [f"{step_id}: {o}" for o in verdict.get("overruled") or []]
        criteria += shown_criteria(verdict)
        idle += not_exercised(verdict.get("names") or [])
        if verdict.get("committed_on") == "task checks":
            on_task.append(step_id)
    summary = criteria_summary(criteria) if criteria else ""
    if idle:  # committed, yet nothing checked what these return
        summary += ("; " if summary else "") + "no result checked for " + ", ".join(idle)
    if on_task:
        summary += ("; " if summary else "") + (
            f"committed on the task's checks only, the model's contract disagreeing: "
            f"{', '.join(on_task)}"
        )
    if over:  # what ran and failed, each with the check that outranked it
        summary += ("; " if summary else "") + "failing checks outranked: " + "; ".join(over)
    return summary


def clause_coverage(
    workspace: Workspace,
    run: RunRef,
    raw_plan: Mapping[str, Any] | None,
    statuses: Mapping[str, str],
) -> Coverage:
    """Which of the task's clauses the committed steps' final verdicts executed, and how.

    Checks cross-examination marked suspect count for nothing; a clause whose checks belong
    to steps never committed is *not run*; one no check covers is *unchecked*.
    """
    if not raw_plan:
        return Coverage()
    plan = Plan.model_validate(raw_plan)
    results: dict[str, list[str]] = {}
    for _, verdict in final_verdicts(workspace, run, statuses):
        suspect = {
            s.get("check")
            for s in (verdict.get("cross_examination") or {}).get("suspect_checks", [])
        }
        for result in check_report(verdict).get("results") or []:
            if result.get("clause") and result.get("check") not in suspect:
                status = str(result.get("status"))
                if status == "passed" and result.get("criterion") in SHAPE_CRITERIA:
                    status = SIGNATURE_PASSED
                results.setdefault(result["clause"], []).append(status)
    return coverage(plan.clauses, results)


def plain_coverage(res: Resources, run: RunRef, state: State) -> Coverage | None:
    """Which of the task's clauses the plain answer handed back meets, its checks run now.

    A run that hands back the plain answer (nothing committed, or the floor) still says
    what its checks found on that code: they run in the sandbox at no model call, so a
    clause is *failed* or *verified* there, never *not run*. None without a plan or checks.
    """
    plain = str(state.get("plain") or "")
    if not state.get("plan") or not plain.strip():
        return None
    plan = Plan.model_validate(state["plan"])
    report = meets_clauses(
        plain, plan.clauses, folder=res.workspace.plain_dir(run) / "checks", runner=res.runner,
        limits=res.limits, defines=task_names(state.get("task") or ""),
    )  # fmt: skip
    if report is None:
        return None
    results: dict[str, list[str]] = {}
    for r in report.results:
        status = str(r.status)
        if status == "passed" and r.check.criterion in SHAPE_CRITERIA:
            status = SIGNATURE_PASSED
        results.setdefault(r.check.clause, []).append(status)
    found = coverage(plan.clauses, results)
    found.of = "the plain answer handed back"
    return found


def _outcome(statuses: Mapping[str, str], budget: str | None, reason: str) -> tuple[RunStatus, str]:
    """The run's final status and reason from its steps and budgets.

    A budget spent before the plan was made (no step yet) ends the run budget_exhausted too.
    """
    if budget is not None and (not statuses or any(s == "pending" for s in statuses.values())):
        return "budget_exhausted", budget
    if statuses and all(s == "committed" for s in statuses.values()):
        return "done", f"all {len(statuses)} steps committed"
    failed = sorted(k for k, v in statuses.items() if v in ("failed", "blocked"))
    return "failed", reason or f"steps not committed: {', '.join(failed) or 'none run'}"


def _learn(res: Resources, state: State) -> list[str]:
    """Write what the run learned to long-term memory, in one write.

    The verdicts' lessons, interfaces and confidence changes (kept in the state until now),
    then the user's decisions and the working-memory candidates at or above the threshold.
    New records are keyed by run (step, attempt, answer or content), so a finish re-run after
    a crash stores nothing twice. Returns the ids of the decisions and promotions.
    """
    session = SessionContext(
        session_id=state["run_id"], project_id=res.ctx.project_id, run_id=state["run_id"]
    )
    changes = MemoryChanges.from_data(session, state.get("learned") or [])
    ids = record_decisions(changes, state.get("answers") or [])
    candidates = state.get("candidates") or []
    if candidates:
        ids += promote_once(changes, candidates, res.ctx.memory_promotion_threshold)
    if changes:
        applied = res.memory.apply(changes)
        if applied.missing:  # forgotten or expired since they were recalled
            logger.info("memories no longer stored, left unchanged: %s", applied.missing)
    return ids + answered_rules(res, session, state.get("answers") or [])


def memory_notes(
    res: Resources, run: RunRef, statuses: Mapping[str, str], written: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """The memories a run wrote and those its prompts recalled (id, type, content; why recalled).

    For run.json and report.md; the recalled ids and why each was chosen come from the
    attempts' verdicts (the first reason given for a memory is kept).
    """
    why: dict[str, str] = {}
    for step_id in statuses:
        try:
            attempts = res.workspace.list_attempts(res.workspace.step(run, step_id))
        except AtomAgentError:
            continue
        for attempt in attempts:
            if attempt.verdict_json.exists():
                entries = res.workspace.read_verdict(attempt).get("memories_recalled") or []
                for memory_id, reason in read_recalled(entries):
                    why[memory_id] = why.get(memory_id) or reason
    recalled = list(why)
    session = SessionContext(session_id=run.run_id, project_id=res.ctx.project_id)

    stored = res.memory.get_many(session, [*written, *recalled]) if written or recalled else {}

    def notes(ids: list[str], reasons: Mapping[str, str]) -> list[dict[str, Any]]:
        out = []
        for memory_id in dict.fromkeys(ids):
            record = stored.get(memory_id)
            if record is None:  # forgotten or expired since
                note = {"id": memory_id, "type": "?", "content": "(no longer stored)"}
            else:
                note = {"id": record.id, "type": record.type.value, "content": record.content[:300]}
            if reasons.get(memory_id):
                note["why"] = reasons[memory_id]
            out.append(note)
        return out

    return {"written": notes(written, {}), "recalled": notes(recalled, why)}
