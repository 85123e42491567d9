"""Reflector node: prove a step from executed evidence (checks, tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atom_agent.budget import now
from atom_agent.checks.exercised import NameUse
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.learning import record_interface, record_lesson
from atom_agent.memory.relevance import recalled_entries
from atom_agent.resources import Resources
from atom_agent.state import State
from atom_agent.telemetry import emit
from atom_agent.verification.decide import Decision, decide
from atom_agent.verification.evidence import (
    criteria_verdicts,
    failure_lesson,
    feedback_of,
    first_failure,
    implicated_dependencies,
    tests_evidence,
)

from ..common import dependants, seconds_left
from .gathering import (
    Executed,
    Target,
    evidence_of,
    execute,
    name_uses_of,
    target_of,
    testify,
)


def make_reflector(res: Resources) -> Any:
    """The reflector node, closed over the run's resources.

    Gather the executed evidence, let :func:`decide` (pure) say what it means, record it.
    """

    def reflector(state: State) -> dict[str, Any]:
        began = now()
        target = target_of(res, state)
        ran = execute(res, target)
        if ran.contract is not None and ran.contract.failed:
            testify(res, target, ran, state.get("drafts"))
        step, contract, suspect = target.step, ran.contract, ran.set_aside
        uses = (
            name_uses_of(step, target.attempt.staging, contract, suspect, ran.tests_ok)
            if not ran.missing
            else []
        )
        took = state.get("attempt_seconds")  # the executor's part; the proving is this node's
        took = None if took is None else took + now() - began
        timing = (took, seconds_left(state, res.ctx))
        decision = decide(evidence_of(res.ctx, state, target, ran, uses, timing))
        criteria = criteria_verdicts(step, contract, suspect)
        feedback = feedback_of(
            ran.missing, ran.result, contract, ran.testimony, ran.checks, ran.tests_ok, criteria,
            outranked=ran.outranked, gaming=[f.describe() for f in ran.gaming],
        )  # fmt: skip
        verdict = _verdict(state, target, ran, decision, criteria, uses, feedback)
        res.workspace.write_verdict(target.attempt, verdict)
        emit(
            "reflector.verdict",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=target.attempt.n,
            outcome=verdict["outcome"],
            decision=decision.action,
            suspect=len(suspect),
        )
        return _record(res, state, target, ran, decision, feedback)

    return reflector


# --- recording -----------------------------------------------------------------------------------


def _outcome(decision: Decision) -> str:
    if decision.passed:
        return "passed"
    if decision.action != "commit":
        return "failed"
    return f"committed on {decision.committed_on}"


def _verdict(
    state: State,
    target: Target,
    ran: Executed,
    decision: Decision,
    criteria: list[dict[str, Any]],
    uses: list[NameUse],
    feedback: str,
) -> dict[str, Any]:
    """verdict.json: the executed evidence, each criterion's status, the decision and why."""
    return {
        "outcome": _outcome(decision),
        "decision": decision.action,
        "decision_reasons": list(decision.reasons),
        "verified": decision.verified,
        "committed_on": decision.committed_on or None,
        # Failing checks the verdict goes over, each with what outranks it: both named.
        "overruled": list(decision.overruled),
        "gaming": [f.describe() for f in ran.gaming],
        "own_tests": [c.describe() for c in ran.checks if c.origin == "own"],
        "attempt": target.attempt.n,
        "missing_files": ran.missing,
        "contract": ran.contract.to_dict() if ran.contract is not None else None,
        "cross_examination": ran.testimony.to_dict(ran.checks),
        "tests": tests_evidence(ran.result),
        "criteria": criteria,
        "names": [u.to_dict() for u in uses],
        "feedback": feedback,
        "memories_recalled": recalled_entries(
            state.get("used_memories") or [], state.get("used_memory_reasons") or {}
        ),
    }


def _record(
    res: Resources,
    state: State,
    target: Target,
    ran: Executed,
    decision: Decision,
    feedback: str,
) -> dict[str, Any]:
    """Commit or not, write what the verdict teaches, and the state update."""
    step = target.step
    update: dict[str, Any] = {
        "failures": {step.id: decision.failures},
        "decision": decision.action,
    }
    # What the verdict teaches; the finish node writes a run's lessons in one go.
    changes = MemoryChanges(target.session)
    earlier = MemoryChanges.from_data(target.session, state.get("learned") or []).records
    notes = _Notes(changes, earlier, list(state.get("used_memories") or []))
    if decision.action == "commit":
        _committed(res, state, target, decision, notes, update)
    else:
        _failed(res, state, target, ran, decision, feedback, notes, update)
    if changes:  # kept in the checkpoint, so nothing is lost if the run stops before
        update["learned"] = [changes.to_data()]
    update["memories_written"] = notes.written
    update["candidates"] = notes.candidates
    return update


@dataclass
class _Notes:
    """What a verdict writes to memory: changes to apply at the finish, ids, candidates."""

    changes: MemoryChanges
    earlier: list[Any]
    used: list[str]
    written: list[str] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)


def _committed(
    res: Resources,
    state: State,
    target: Target,
    decision: Decision,
    notes: _Notes,
    update: dict[str, Any],
) -> None:
    step, step_ref, attempt = target.step, target.step_ref, target.attempt
    res.workspace.commit(step_ref, attempt)
    res.workspace.update_step(
        step_ref,
        status="committed",
        committed_attempt=attempt.n,
        verdict=_outcome(decision),
    )
    if decision.passed:  # memories in the prompt helped code that met every check
        _adjust(notes.changes, notes.used, up=True, evidence=f"step {step.id} passed its tests")
    # Each write is keyed by (run, step, attempt, kind): a re-run after a crash adds none.
    notes.written += record_interface(
        res.memory, notes.changes, step, step_ref.artifacts, earlier=notes.earlier
    )
    update["step_status"] = {**dict(state.get("step_status") or {}), step.id: "committed"}


def _failed(
    res: Resources,
    state: State,
    target: Target,
    ran: Executed,
    decision: Decision,
    feedback: str,
    notes: _Notes,
    update: dict[str, Any],
) -> None:
    step, result = target.step, ran.result
    lesson = failure_lesson(step, ran.contract, ran.set_aside, result, ran.tests_ok)
    notes.written += record_lesson(
        res.memory,
        notes.changes,
        "failure",
        lesson,
        confidence=0.6,
        rationale=f"executed evidence of step {step.id!r}, attempt {target.attempt.n}",
        earlier=notes.earlier,
    )
    if result is not None and result.tests is not None and result.tests.failed:
        notes.candidates.append(
            {
                "content": f"In steps like '{step.title}', tests failed: {first_failure(result)}",
                "type": "lesson_learned",
                "importance": 0.4,
            }
        )
    if decision.action in ("replan", "fail"):
        _adjust(notes.changes, notes.used, up=False, evidence=f"step {step.id} failed: {feedback}")
    if decision.action == "replan":
        implicated = implicated_dependencies(target.plan, step, ran.contract, ran.set_aside)
        update["reopen"] = sorted(implicated)
        update["plan_feedback"] = (
            f"step {step.id!r} ({step.title}) failed {decision.failures} attempts. "
            f"Last feedback: {feedback[:800]}"
            + "".join(
                f"\nThe evidence implicates committed step {d!r}: {why}"
                for d, why in sorted(implicated.items())
            )
        )
    if decision.action == "fail":
        _fail_step(res, state, target, update)
        if decision.out_of_time:  # the run's reason, should it end failed
            update["stop_reason"] = f"step {step.id} not committed: {decision.out_of_time}"


def _fail_step(res: Resources, state: State, target: Target, update: dict[str, Any]) -> None:
    """The step failed for good: it and every step depending on it are marked."""
    step = target.step
    blocked = dependants(target.plan, step.id)
    update["step_status"] = {
        **dict(state.get("step_status") or {}),
        step.id: "failed",
        **{b: "blocked" for b in blocked},
    }
    res.workspace.update_step(target.step_ref, status="failed", verdict="failed")
    for other in blocked:
        res.workspace.update_step(
            res.workspace.step(target.run, other),
            status="blocked",
            reason=f"depends on failed step {step.id}",
        )


def _adjust(changes: MemoryChanges, ids: list[str], *, up: bool, evidence: str) -> None:
    for memory_id in ids:
        if up:
            changes.reinforce(memory_id, evidence=evidence[:500])
        else:
            changes.contradict(memory_id, amount=0.15, evidence=evidence[:500])
