"""Reflector node: prove a step from evidence (tests, hard-coding check, criteria judgement)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from atom_agent import prompts
from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.examples import examples_feedback, run_examples, task_examples
from atom_agent.checks.exercised import NameUse, name_uses
from atom_agent.checks.hardcoding import check_file
from atom_agent.checks.names import defined_in_code
from atom_agent.context import Context
from atom_agent.errors import ConfigError, ModelError, ModelSpecError
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.relevance import recalled_entries
from atom_agent.models.profiles import profile_for
from atom_agent.models.structured import invoke_structured
from atom_agent.resources import Resources
from atom_agent.sandbox import RunResult
from atom_agent.state import IMPL_FILE, REQUIRED_FILES, TEST_FILE, Judgement, Plan, PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of
from atom_agent.workspace import AttemptRef, StepRef

from .common import (
    AttemptScope,
    attempt_scope,
    available_names,
    dependants,
    plan_of,
    python_ident,
    run_ref,
    step_session,
)
from .crossexam import MIN_WITNESSES, Testimony, cross_examine
from .drafting import WITNESS_TEMPERATURE, dependency_lines, draft_prompt, independent_samples
from .evidence import (
    criteria_verdicts,
    feedback_of,
    first_failure,
    implicated_dependencies,
    tests_evidence,
    uncovered,
)
from .executor import DRAFTS_FILE
from .learning import failure_lesson, record_interface, record_lesson

logger = logging.getLogger(__name__)

Decision = Literal["commit", "retry", "replan", "fail"]
_SOURCE_CHARS = 6000
_OUTPUT_TAIL = 2500


def make_reflector(res: Resources) -> Any:
    """The reflector node, closed over the run's resources."""

    def reflector(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = res.ctx
        plan = plan_of(state)
        step = next(s for s in plan.steps if s.id == state.get("current_step"))
        run = run_ref(res, state)
        step_ref = res.workspace.step(run, step.id)
        attempt = res.workspace.attempt(step_ref, (state.get("attempts") or {})[step.id])
        staging = attempt.staging
        session = step_session(state, ctx, step.id, attempt.n)
        missing = [f for f in REQUIRED_FILES if not (staging / f).is_file()]
        scope = attempt_scope(res.workspace, step_ref, attempt)
        available = available_names(res.workspace.dependency_artifacts(step_ref))
        model = res.model("executor")
        profile = profile_for(model, ctx.model_profile)
        result: RunResult | None = None
        if not missing:
            result = res.runner.run_pytest(
                cwd=staging, limits=res.limits, targets=[TEST_FILE], python_path=scope.python_path()
            )
        tests_ok = _tests_ok(result)
        contract: ContractReport | None = None
        if step.checks and IMPL_FILE not in missing:
            contract = run_contract(
                step.checks,
                staging=staging,
                runner=res.runner,
                limits=res.limits,
                python_path=scope.python_path(),
                defines=step.defines,
                available=available,
            )
        examples = None
        wanted = task_examples(state["task"], step.description)
        if wanted and IMPL_FILE not in missing:
            examples = run_examples(
                wanted,
                staging=staging,
                runner=res.runner,
                limits=res.limits,
                python_path=scope.python_path(),
            )
        hard = check_file(staging / IMPL_FILE) if IMPL_FILE not in missing else None
        hard_ok = hard is None or hard.ok

        usage: dict[str, float] = {}
        testimony = Testimony()
        if contract is not None and (contract.failed or (result is not None and not tests_ok)):
            testimony, spent = _cross_examine(
                res, state["task"], plan, step, step_ref, attempt, scope, contract, result,
                tests_ok, profile.cross_samples, available,
            )  # fmt: skip
            usage = _sum_usage(usage, usage_of(spent, model_name_of(model)))
        suspect = set(testimony.suspect_checks)
        contract_ok = contract is None or contract.holds(ignore=suspect)
        own_tests_ok = tests_ok or testimony.tests_suspect
        executed_ok = (
            not missing
            and hard_ok
            and contract_ok
            and own_tests_ok
            and (tests_ok or (contract is not None and bool(contract.passed)))
        )
        judgement: Judgement | None = None
        unbacked = uncovered(step, contract, suspect)
        if executed_ok and profile.judge and unbacked:
            judgement, spent_usage = _judge(res, step, staging, result, unbacked)
            usage = _sum_usage(usage, spent_usage)
        criteria = criteria_verdicts(step, contract, suspect, result, tests_ok, judgement)
        uses = _name_uses(step, staging, contract, suspect, tests_ok) if not missing else []
        passed = executed_ok

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
        # The task's own examples come first: they say which side a failure is on.
        hints = (
            examples_feedback(examples, result is not None and not tests_ok)
            if examples is not None and not testimony.tests_suspect
            else []
        )
        feedback = feedback_of(
            missing, result, hard, contract, testimony, step.checks, tests_ok, hard_ok,
            criteria, hints,
        )  # fmt: skip
        verdict = {
            "outcome": "passed" if passed else "failed",
            "decision": decision,
            "attempt": attempt.n,
            "missing_files": missing,
            "contract": contract.to_dict() if contract is not None else None,
            "cross_examination": testimony.to_dict(step.checks),
            "tests": tests_evidence(result),
            "task_examples": examples.to_dict() if examples is not None else None,
            "hardcoding": hard.summary().splitlines() if hard is not None and not hard.ok else [],
            "hardcoding_report": hard.to_dict() if hard is not None else None,
            "criteria": criteria,
            "names": [u.to_dict() for u in uses],
            "feedback": feedback,
            "lesson": judgement.lesson if judgement else "",
            "memories_recalled": recalled_entries(
                state.get("used_memories") or [], state.get("used_memory_reasons") or {}
            ),
        }
        res.workspace.write_verdict(attempt, verdict)
        emit(
            "reflector.verdict",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            outcome=verdict["outcome"],
            decision=decision,
            suspect=len(suspect),
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
        # What the verdict teaches; the finish node writes a run's lessons in one go.
        changes = MemoryChanges(session)
        earlier = MemoryChanges.from_data(session, state.get("learned") or []).records
        if passed:
            res.workspace.commit(step_ref, attempt)
            res.workspace.update_step(
                step_ref, status="committed", committed_attempt=attempt.n, verdict="passed"
            )
            _adjust(changes, used, up=True, evidence=f"step {step.id} passed its tests")
            # Each write is keyed by (run, step, attempt, kind): a re-run after a crash adds none.
            written += record_interface(
                res.memory, changes, step, step_ref.artifacts, earlier=earlier
            )
            if judgement is not None and judgement.lesson.strip():
                written += record_lesson(
                    res.memory,
                    changes,
                    "lesson",
                    judgement.lesson,
                    confidence=0.7,
                    rationale=f"learned while committing step {step.id!r}",
                    earlier=earlier,
                )
            update["step_status"] = {**statuses, step.id: "committed"}
        else:
            lesson = failure_lesson(
                step, contract, suspect, result, tests_ok, testimony.tests_suspect, hard
            )
            written += record_lesson(
                res.memory,
                changes,
                "failure",
                lesson,
                confidence=0.6,
                rationale=f"executed evidence of step {step.id!r}, attempt {attempt.n}",
                earlier=earlier,
            )
            if result is not None and result.tests is not None and result.tests.failed:
                candidates.append(
                    {
                        "content": f"In steps like '{step.title}', tests failed: "
                        f"{first_failure(result)}",
                        "type": "lesson_learned",
                        "importance": 0.4,
                    }
                )
            if decision in ("replan", "fail"):
                _adjust(changes, used, up=False, evidence=f"step {step.id} failed: {feedback}")
            if decision == "replan":
                implicated = implicated_dependencies(plan, step, contract, suspect)
                update["reopen"] = sorted(implicated)
                update["plan_feedback"] = (
                    f"step {step.id!r} ({step.title}) failed {failures} attempts. "
                    f"Last feedback: {feedback[:800]}"
                    + "".join(
                        f"\nThe evidence implicates committed step {d!r}: {why}"
                        for d, why in sorted(implicated.items())
                    )
                )
            if decision == "fail":
                blocked = dependants(plan, step.id)
                update["step_status"] = {
                    **statuses,
                    step.id: "failed",
                    **{b: "blocked" for b in blocked},
                }
                res.workspace.update_step(step_ref, status="failed", verdict="failed")
                for other in blocked:
                    res.workspace.update_step(
                        res.workspace.step(run, other),
                        status="blocked",
                        reason=f"depends on failed step {step.id}",
                    )
        if changes:  # kept in the checkpoint, so nothing is lost if the run stops before
            update["learned"] = [changes.to_data()]
        update["memories_written"] = written
        update["candidates"] = candidates
        return update

    return reflector


def _tests_ok(result: RunResult | None) -> bool:
    if result is None or result.tests is None or not result.ok:
        return False
    t = result.tests
    return t.passed > 0 and t.failed == 0 and t.errors == 0


def _name_uses(
    step: PlanStep,
    staging: Path,
    contract: ContractReport | None,
    suspect: set[int],
    tests_ok: bool,
) -> list[NameUse]:
    """What executed each name the step defines (those impl.py does define); a label only."""
    source = (staging / IMPL_FILE).read_text(encoding="utf-8", errors="replace")
    names = [n for n in step.defines if n in set(defined_in_code(source))]
    tests = (staging / TEST_FILE).read_text(encoding="utf-8", errors="replace")
    return name_uses(names, contract, ignore=suspect, tests_source=tests, tests_passed=tests_ok)


def _read(path: Path) -> str:
    text = path.read_text(errors="replace") if path.is_file() else "(missing)"
    return text if len(text) <= _SOURCE_CHARS else text[:_SOURCE_CHARS] + "\n# … (truncated)"


def _judge(
    res: Resources,
    step: PlanStep,
    staging: Path,
    result: RunResult | None,
    criteria: list[str],
) -> tuple[Judgement | None, dict[str, float]]:
    """The reflector model's opinion of the criteria no check executed (labelled *judged*)."""
    model = res.model("reflector")
    evidence = tests_evidence(result)
    messages = [
        SystemMessage(prompts.REFLECTOR_SYSTEM),
        HumanMessage(
            prompts.REFLECTOR_TASK.format(
                title=step.title,
                description=step.description,
                criteria="\n".join(f"- {c}" for c in criteria),
                test_summary=evidence["summary"],
                test_output=str(evidence.get("output_tail", ""))[-1200:],
                impl=_read(staging / IMPL_FILE),
                tests=_read(staging / TEST_FILE),
            )
        ),
    ]
    spent: list[AIMessage] = []
    judgement: Judgement | None = None
    for _ in range(2):  # once more if the judgement skipped criteria
        try:
            reply = invoke_structured(res.structured("reflector", Judgement), messages)
        except ModelError as exc:
            if isinstance(exc, ConfigError | ModelSpecError):
                raise  # configuration, not the model's answer: the run must fail with the fix
            logger.warning("reflector judgement failed: %s", exc)
            break
        if reply.raw is not None:
            spent.append(reply.raw)
        if reply.parsed is None:
            logger.warning("reflector judgement did not parse: %s", reply.error)
            break
        judgement = Judgement.model_validate(reply.parsed)
        skipped = _skipped(criteria, judgement)
        if not skipped:
            break
        emit("reflector.skipped_criteria", step_id=step.id, skipped=len(skipped))
        messages = [
            *messages,
            HumanMessage(
                prompts.REFLECTOR_SKIPPED.format(
                    judged=len(judgement.criteria),
                    total=len(criteria),
                    criteria="\n".join(f"- {c}" for c in criteria),
                )
            ),
        ]
    return judgement, usage_of(spent, model_name_of(model))


def _skipped(criteria: list[str], judgement: Judgement) -> list[str]:
    """The criteria the judgement has no entry for (judged ones matched by text)."""
    if len(judgement.criteria) >= len(criteria):
        return []
    judged = {c.criterion.strip().lower() for c in judgement.criteria}
    missing = [c for c in criteria if c.strip().lower() not in judged]
    return missing or list(criteria[len(judgement.criteria) :])


def _cross_examine(
    res: Resources,
    task: str,
    plan: Plan,
    step: PlanStep,
    step_ref: StepRef,
    attempt: AttemptRef,
    scope: AttemptScope,
    contract: ContractReport,
    result: RunResult | None,
    tests_ok: bool,
    samples: int,
    available: list[str],
) -> tuple[Testimony, list[AIMessage]]:
    """Independent implementations (uninformed drafts, fresh samples) testify on the failures."""
    witnesses = _uninformed_drafts(attempt, exclude=scope.staging / IMPL_FILE)
    spent: list[AIMessage] = []
    wanted = max(0, MIN_WITNESSES - len(witnesses))
    if samples and wanted:
        artifacts = res.workspace.dependency_artifacts(step_ref)
        deps = dependency_lines(artifacts, lambda d: f"deps.{python_ident(d)}.impl")
        prompt = draft_prompt(task, plan, step, deps, "")
        fresh, spent = independent_samples(
            res.model("executor"),
            prompt,
            n=min(samples, wanted),
            temperature=WITNESS_TEMPERATURE,
            task=task,
            defines=step.defines,
        )
        witnesses += fresh
    testimony = cross_examine(
        checks=step.checks,
        examined=contract,
        witnesses=witnesses,
        tests_failed=result is not None and not tests_ok,
        test_file=scope.staging / TEST_FILE,
        runner=res.runner,
        limits=res.limits,
        python_path=scope.python_path()[1:],
        defines=step.defines,
        available=available,
    )
    emit(
        "reflector.cross_examination",
        step_id=step.id,
        witnesses=testimony.witnesses,
        suspect=len(testimony.suspect_checks),
        tests_suspect=testimony.tests_suspect,
    )
    return testimony, spent


def _uninformed_drafts(attempt: AttemptRef, exclude: Path) -> list[str]:
    """Sources of this attempt's drafts written before any check result was shown."""
    record = attempt.path / DRAFTS_FILE
    if not record.is_file():
        return []
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    examined = exclude.read_text(errors="replace") if exclude.is_file() else None
    sources = []
    for candidate in data.get("candidates", []):
        path = candidate.get("path")
        if candidate.get("informed") or not path or not (Path(path) / IMPL_FILE).is_file():
            continue
        source = (Path(path) / IMPL_FILE).read_text(errors="replace")
        if source != examined:
            sources.append(source)
    return sources


def _sum_usage(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}


def _adjust(changes: MemoryChanges, ids: list[str], *, up: bool, evidence: str) -> None:
    for memory_id in ids:
        if up:
            changes.reinforce(memory_id, evidence=evidence[:500])
        else:
            changes.contradict(memory_id, amount=0.15, evidence=evidence[:500])
