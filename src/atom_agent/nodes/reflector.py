"""Reflector node: prove a step from evidence (tests, hard-coding check, criteria judgement)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from atom_agent import prompts
from atom_agent.checks.examples import examples_feedback, run_examples, task_examples
from atom_agent.checks.hardcoding import check_file
from atom_agent.context import Context
from atom_agent.errors import AtomAgentError
from atom_agent.models.structured import invoke_structured
from atom_agent.sandbox import RunResult
from atom_agent.services import Models, Services
from atom_agent.session import SessionContext
from atom_agent.state import Judgement, PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of

from .attempt_control import REQUIRED_FILES
from .common import attempt_scope, dependants, plan_of, run_ref, services, step_session

logger = logging.getLogger(__name__)

Decision = Literal["commit", "retry", "replan", "fail"]
_SOURCE_CHARS = 6000
_OUTPUT_TAIL = 2500


def make_reflector(models: Models | None) -> Any:
    """The reflector node, closed over the model override of `build_graph`."""

    def reflector(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        svc = services(runtime, models)
        ctx = svc.ctx
        plan = plan_of(state)
        step = next(s for s in plan.steps if s.id == state.get("current_step"))
        run = run_ref(svc, state)
        step_ref = svc.workspace.step(run, step.id)
        attempt = svc.workspace.attempt(step_ref, (state.get("attempts") or {})[step.id])
        staging = attempt.staging
        session = step_session(state, ctx, step.id, attempt.n)
        missing = [f for f in REQUIRED_FILES if not (staging / f).is_file()]
        scope = attempt_scope(svc.workspace, step_ref, attempt)
        result: RunResult | None = None
        if not missing:
            result = svc.runner.run_pytest(
                cwd=staging, limits=svc.limits, targets=["test.py"], python_path=scope.python_path()
            )
        tests_ok = _tests_ok(result)
        examples = None
        wanted = task_examples(state["task"], step.description)
        if wanted and "impl.py" not in missing:
            examples = run_examples(
                wanted,
                staging=staging,
                runner=svc.runner,
                limits=svc.limits,
                python_path=scope.python_path(),
            )
        hard = check_file(staging / "impl.py") if "impl.py" not in missing else None
        hard_ok = hard is None or hard.ok

        judgement: Judgement | None = None
        usage: dict[str, float] = {}
        if tests_ok and hard_ok:
            judgement, usage = _judge(svc, step, staging, result)
        criteria_ok = judgement is not None and _all_met(step, judgement)
        passed = tests_ok and hard_ok and criteria_ok

        failures = (state.get("failures") or {}).get(step.id, 0) + (0 if passed else 1)
        decision: Decision
        if passed:
            decision = "commit"
        elif failures < ctx.max_attempts:
            decision = "retry"
        elif state.get("replans", 0) < ctx.max_replans:
            decision = "replan"
        else:
            decision = "fail"
        skipped = _skipped(step, judgement) if judgement is not None else []
        # The task's own examples come first: they say which side a failure is on.
        hints = (
            examples_feedback(examples, result is not None and not tests_ok)
            if examples is not None
            else []
        )
        feedback = _feedback(missing, result, hard, judgement, tests_ok, hard_ok, skipped, hints)
        verdict = {
            "outcome": "passed" if passed else "failed",
            "decision": decision,
            "attempt": attempt.n,
            "missing_files": missing,
            "tests": _tests_evidence(result),
            "task_examples": examples.to_dict() if examples is not None else None,
            "hardcoding": hard.summary().splitlines() if hard is not None and not hard.ok else [],
            "hardcoding_report": hard.to_dict() if hard is not None else None,
            "criteria": [c.model_dump() for c in judgement.criteria] if judgement else [],
            "feedback": feedback,
            "lesson": judgement.lesson if judgement else "",
        }
        svc.workspace.write_verdict(attempt, verdict)
        emit(
            "reflector.verdict",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            outcome=verdict["outcome"],
            decision=decision,
        )
        used = list(state.get("used_memories") or [])
        statuses = dict(state.get("step_status") or {})
        update: dict[str, Any] = {
            "failures": {step.id: failures},
            "usage": usage,
            "decision": decision,
            "last_verdict": {
                "step_id": step.id,
                "attempt": attempt.n,
                "outcome": verdict["outcome"],
                "decision": decision,
                "feedback": feedback[:500],
            },
        }
        written: list[str] = []
        candidates: list[dict[str, Any]] = []
        if passed:
            svc.workspace.commit(step_ref, attempt)
            svc.workspace.update_step(
                step_ref, status="committed", committed_attempt=attempt.n, verdict="passed"
            )
            _adjust(svc, session, used, up=True, evidence=f"step {step.id} passed its tests")
            if judgement is not None and judgement.lesson.strip():
                record = svc.memory.remember(
                    session,
                    judgement.lesson.strip()[:2000],
                    type="lesson_learned",
                    confidence=0.7,
                    source_type="reflector",
                    rationale=f"learned while committing step {step.id!r}",
                )
                written.append(record.id)
            update["step_status"] = {**statuses, step.id: "committed"}
        else:
            if result is not None and result.tests is not None and result.tests.failed:
                candidates.append(
                    {
                        "content": f"In steps like '{step.title}', tests failed: "
                        f"{_first_failure(result)}",
                        "type": "lesson_learned",
                        "importance": 0.4,
                    }
                )
            if decision in ("replan", "fail"):
                _adjust(svc, session, used, up=False, evidence=f"step {step.id} failed: {feedback}")
            if decision == "replan":
                update["plan_feedback"] = (
                    f"step {step.id!r} ({step.title}) failed {failures} attempts. "
                    f"Last feedback: {feedback[:800]}"
                )
            if decision == "fail":
                blocked = dependants(plan, step.id)
                update["step_status"] = {
                    **statuses,
                    step.id: "failed",
                    **{b: "blocked" for b in blocked},
                }
                svc.workspace.update_step(step_ref, status="failed", verdict="failed")
                for other in blocked:
                    svc.workspace.update_step(
                        svc.workspace.step(run, other),
                        status="blocked",
                        reason=f"depends on failed step {step.id}",
                    )
        update["memories_written"] = written
        update["candidates"] = candidates
        return update

    return reflector


def _tests_ok(result: RunResult | None) -> bool:
    if result is None or result.tests is None or not result.ok:
        return False
    t = result.tests
    return t.passed > 0 and t.failed == 0 and t.errors == 0


def _tests_evidence(result: RunResult | None) -> dict[str, Any]:
    if result is None:
        return {"ran": False, "summary": "not run: impl.py or test.py is missing"}
    counts = result.tests
    summary = (
        f"{counts.passed} passed, {counts.failed} failed, {counts.errors} errors"
        if counts is not None
        else "no test counts"
    )
    if result.timed_out:
        summary += f"; killed at the {result.limit_hit} limit"
    elif result.exit_code not in (0, None) and counts is not None and counts.total == 0:
        summary += f"; pytest exited {result.exit_code} (nothing collected?)"
    return {
        "ran": True,
        "summary": summary,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_s": round(result.duration_s, 3),
        "counts": None if counts is None else {**counts.__dict__, "total": counts.total},
        "output_tail": result.output[-_OUTPUT_TAIL:],
    }


def _first_failure(result: RunResult) -> str:
    for line in result.output.splitlines():
        if line.startswith(("FAILED", "ERROR", "E ")):
            return line.strip()[:300]
    return "see the test output"


def _read(path: Path) -> str:
    text = path.read_text(errors="replace") if path.is_file() else "(missing)"
    return text if len(text) <= _SOURCE_CHARS else text[:_SOURCE_CHARS] + "\n# … (truncated)"


def _judge(
    svc: Services, step: PlanStep, staging: Path, result: RunResult | None
) -> tuple[Judgement | None, dict[str, float]]:
    model = svc.model("reflector")
    evidence = _tests_evidence(result)
    messages = [
        SystemMessage(prompts.REFLECTOR_SYSTEM),
        HumanMessage(
            prompts.REFLECTOR_TASK.format(
                title=step.title,
                description=step.description,
                criteria="\n".join(f"- {c}" for c in step.acceptance_criteria),
                test_summary=evidence["summary"],
                test_output=str(evidence.get("output_tail", ""))[-1200:],
                impl=_read(staging / "impl.py"),
                tests=_read(staging / "test.py"),
            )
        ),
    ]
    spent: list[AIMessage] = []
    judgement: Judgement | None = None
    for _ in range(2):  # once more if the judgement skipped criteria
        try:
            reply = invoke_structured(svc.structured("reflector", Judgement), messages)
        except AtomAgentError as exc:
            logger.warning("reflector judgement failed: %s", exc)
            break
        if reply.raw is not None:
            spent.append(reply.raw)
        if reply.parsed is None:
            logger.warning("reflector judgement did not parse: %s", reply.error)
            break
        judgement = Judgement.model_validate(reply.parsed)
        skipped = _skipped(step, judgement)
        if not skipped:
            break
        emit("reflector.skipped_criteria", step_id=step.id, skipped=len(skipped))
        messages = [
            *messages,
            HumanMessage(
                f"Your judgement covered {len(judgement.criteria)} of the "
                f"{len(step.acceptance_criteria)} criteria. Judge every criterion, one entry "
                "each, in this order:\n" + "\n".join(f"- {c}" for c in step.acceptance_criteria)
            ),
        ]
    return judgement, usage_of(spent, model_name_of(model))


def _skipped(step: PlanStep, judgement: Judgement) -> list[str]:
    """The step's criteria the judgement has no entry for (judged ones matched by text)."""
    if len(judgement.criteria) >= len(step.acceptance_criteria):
        return []
    judged = {c.criterion.strip().lower() for c in judgement.criteria}
    missing = [c for c in step.acceptance_criteria if c.strip().lower() not in judged]
    return missing or list(step.acceptance_criteria[len(judgement.criteria) :])


def _all_met(step: PlanStep, judgement: Judgement) -> bool:
    """Every criterion judged and met; a judgement that skips criteria does not pass."""
    return not _skipped(step, judgement) and all(c.met for c in judgement.criteria)


def _feedback(
    missing: list[str],
    result: RunResult | None,
    hard: Any,
    judgement: Judgement | None,
    tests_ok: bool,
    hard_ok: bool,
    skipped: list[str],
    hints: list[str],
) -> str:
    parts: list[str] = list(hints)
    if missing:
        parts.append(f"missing files: {', '.join(missing)} (write both impl.py and test.py)")
    if result is not None and not tests_ok:
        parts.append(f"tests did not pass: {_tests_evidence(result)['summary']}")
        parts.append(f"first failure: {_first_failure(result)}")
    if not hard_ok and hard is not None:
        parts.append("hard-coded outputs found, compute them instead: " + hard.summary())
    if judgement is not None:
        if skipped:
            parts.append(
                "the reviewer did not judge these criteria (make the tests show each one): "
                + "; ".join(skipped)
            )
        unmet = [c for c in judgement.criteria if not c.met]
        for c in unmet:
            parts.append(f"criterion not met: {c.criterion} ({c.evidence})")
        if judgement.feedback.strip() and unmet:
            parts.append(judgement.feedback.strip())
    elif tests_ok and hard_ok:
        parts.append("the reviewer could not judge the criteria; make tests name each criterion")
    return "\n".join(parts)


def _adjust(
    svc: Services, session: SessionContext, ids: list[str], *, up: bool, evidence: str
) -> None:
    for memory_id in ids:
        try:
            if up:
                svc.memory.reinforce(session, memory_id, evidence=evidence[:500])
            else:
                svc.memory.contradict(session, memory_id, amount=0.15, evidence=evidence[:500])
        except AtomAgentError as exc:  # forgotten or expired since it was recalled
            logger.info("could not adjust memory %s: %s", memory_id, exc)
