"""Reflector node: prove a step from evidence (tests, hard-coding check, criteria judgement)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from atom_agent import prompts
from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.examples import (
    ExamplesReport,
    examples_feedback,
    run_examples,
    task_examples,
)
from atom_agent.checks.exercised import NameUse, name_uses, not_exercised
from atom_agent.checks.hardcoding import HardcodingReport, check_file
from atom_agent.checks.names import defined_in_code
from atom_agent.context import Context
from atom_agent.errors import ConfigError, ModelError, ModelSpecError
from atom_agent.memory.changes import MemoryChanges
from atom_agent.models.profiles import profile_for
from atom_agent.models.structured import invoke_structured
from atom_agent.resources import Resources
from atom_agent.sandbox import RunResult
from atom_agent.session import SessionContext
from atom_agent.state import IMPL_FILE, REQUIRED_FILES, TEST_FILE, Judgement, Plan, PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of
from atom_agent.verification.decide import Decision, Evidence, decide
from atom_agent.workspace import AttemptRef, RunRef, StepRef

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

_SOURCE_CHARS = 6000
_OUTPUT_TAIL = 2500
_FAILED = ("failed", "error", "timeout")


@dataclass(frozen=True)
class _Target:
    """The attempt the reflector judges, and where it lives."""

    plan: Plan
    step: PlanStep
    run: RunRef
    step_ref: StepRef
    attempt: AttemptRef
    scope: AttemptScope
    available: list[str]
    session: SessionContext


@dataclass
class _Executed:
    """What running the attempt's code gave: its tests, contract, the task's examples."""

    missing: list[str]
    result: RunResult | None
    contract: ContractReport | None
    examples: ExamplesReport | None
    hard: HardcodingReport | None
    testimony: Testimony = field(default_factory=Testimony)
    usage: dict[str, float] = field(default_factory=dict)

    @property
    def tests_ok(self) -> bool:
        """The step's own tests ran, and all passed."""
        return _tests_ok(self.result)

    @property
    def hard_ok(self) -> bool:
        """No hard-coded output found (or no impl.py to look at)."""
        return self.hard is None or self.hard.ok

    @property
    def suspect(self) -> set[int]:
        """Indexes of the checks independent implementations contradicted."""
        return set(self.testimony.suspect_checks)


def make_reflector(res: Resources) -> Any:
    """The reflector node, closed over the run's resources.

    Gather the executed evidence, let :func:`decide` (pure) say what it means, record it.
    """

    def reflector(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        target = _target(res, state)
        ran = _execute(res, state["task"], target)
        profile = profile_for(res.model("executor"), res.ctx.model_profile)
        if ran.contract is not None and (
            ran.contract.failed or (ran.result is not None and not ran.tests_ok)
        ):
            _testify(res, state["task"], target, ran, profile.cross_samples)
        step, contract, suspect = target.step, ran.contract, ran.suspect
        uses = (
            _name_uses(step, target.attempt.staging, contract, suspect, ran.tests_ok)
            if not ran.missing
            else []
        )
        decision = decide(_evidence(res.ctx, state, target, ran, uses))
        judgement: Judgement | None = None
        unbacked = uncovered(step, contract, suspect)
        if decision.passed and profile.judge and unbacked:
            judgement, spent = _judge(res, step, target.attempt.staging, ran.result, unbacked)
            ran.usage = _sum_usage(ran.usage, spent)
        criteria = criteria_verdicts(step, contract, suspect, ran.result, ran.tests_ok, judgement)
        feedback = _feedback(state["task"], step, ran, criteria)
        verdict = _verdict(state, target, ran, decision, criteria, uses, feedback, judgement)
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
        return _record(res, state, target, ran, decision, judgement, feedback)

    return reflector


# --- gathering -----------------------------------------------------------------------------------


def _target(res: Resources, state: State) -> _Target:
    """The current step's latest attempt, its scope and what its dependencies define."""
    plan = plan_of(state)
    step = next(s for s in plan.steps if s.id == state.get("current_step"))
    run = run_ref(res, state)
    step_ref = res.workspace.step(run, step.id)
    attempt = res.workspace.attempt(step_ref, (state.get("attempts") or {})[step.id])
    return _Target(
        plan=plan,
        step=step,
        run=run,
        step_ref=step_ref,
        attempt=attempt,
        scope=attempt_scope(res.workspace, step_ref, attempt),
        available=available_names(res.workspace.dependency_artifacts(step_ref)),
        session=step_session(state, res.ctx, step.id, attempt.n),
    )


def _execute(res: Resources, task: str, target: _Target) -> _Executed:
    """Run the attempt's tests, its contract, the task's examples; look for hard-coding."""
    step, staging = target.step, target.attempt.staging
    python_path = target.scope.python_path()
    missing = [f for f in REQUIRED_FILES if not (staging / f).is_file()]
    has_impl = IMPL_FILE not in missing
    result: RunResult | None = None
    if not missing:
        result = res.runner.run_pytest(
            cwd=staging, limits=res.limits, targets=[TEST_FILE], python_path=python_path
        )
    contract: ContractReport | None = None
    if step.checks and has_impl:
        contract = run_contract(
            step.checks,
            staging=staging,
            runner=res.runner,
            limits=res.limits,
            python_path=python_path,
            defines=step.defines,
            available=target.available,
        )
    examples = None
    wanted = task_examples(task, step.description)
    if wanted and has_impl:
        examples = run_examples(
            wanted, staging=staging, runner=res.runner, limits=res.limits, python_path=python_path
        )
    hard = check_file(staging / IMPL_FILE) if has_impl else None
    return _Executed(missing, result, contract, examples, hard)


def _evidence(
    ctx: Context, state: State, target: _Target, ran: _Executed, uses: list[NameUse]
) -> Evidence:
    """The plain values :func:`decide` rules on."""
    contract, suspect = ran.contract, ran.suspect
    task_ok = contract is not None and contract.task_checks_hold(ignore=suspect)
    trusted_failed = [
        r for i, r in enumerate(contract.results if contract else []) if i not in suspect
        and r.status in _FAILED
    ]  # fmt: skip
    public = [u.to_dict() for u in uses if not u.name.startswith("_")]
    return Evidence(
        max_attempts=ctx.max_attempts,
        max_replans=ctx.max_replans,
        failures=(state.get("failures") or {}).get(target.step.id, 0),
        replans=state.get("replans", 0),
        missing=tuple(ran.missing),
        tests_ok=ran.tests_ok,
        tests_suspect=ran.testimony.tests_suspect,
        hard_ok=ran.hard_ok,
        contract_ok=contract is None or contract.holds(ignore=suspect),
        contract_passed_any=contract is not None and bool(contract.passed),
        # A check a user gave is the user's word too: failing one is never outvoted.
        task_checks_ok=task_ok and not any(r.check.origin == "user" for r in trusted_failed),
        model_disagrees=tuple(
            f"{r.check.describe()[:160]} ({(r.reason or r.got)[:120]})"
            for r in trusted_failed
            if r.check.origin == "planner"
        ),
        unchecked_clauses=tuple(unchecked_clauses(target.plan, target.step)),
        unexecuted_names=tuple(not_exercised(public)),
    )


def unchecked_clauses(plan: Plan, step: PlanStep) -> list[str]:
    """The task's clauses no check executes that name something `step` defines.

    A clause that names nothing a step defines stays a run-level *unchecked* clause (the
    clause coverage of the run lists it); one that names the step's code is that step's.
    """
    checked = {c.clause for s in plan.steps for c in s.checks if c.clause}
    checked |= {clause.id for clause in plan.clauses if clause.checks}
    found = []
    for clause in plan.clauses:
        if clause.id in checked:
            continue
        if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", clause.text) for n in step.defines):
            text = " ".join(clause.text.split())
            found.append(f"{clause.id} ({text[:80]}{'…' if len(text) > 80 else ''})")
    return found


def _feedback(task: str, step: PlanStep, ran: _Executed, criteria: list[dict[str, Any]]) -> str:
    """What the next attempt is told; the task's own examples first.

    The examples say which side a failure is on: the code, or a test that expects otherwise.
    """
    hints = (
        examples_feedback(ran.examples, ran.result is not None and not ran.tests_ok)
        if ran.examples is not None and not ran.testimony.tests_suspect
        else []
    )
    return feedback_of(
        ran.missing, ran.result, ran.hard, ran.contract, ran.testimony, step.checks, ran.tests_ok,
        ran.hard_ok, criteria, hints,
    )  # fmt: skip


# --- recording -----------------------------------------------------------------------------------


def _outcome(decision: Decision) -> str:
    if decision.passed:
        return "passed"
    return "committed on task checks" if decision.action == "commit" else "failed"


def _verdict(
    state: State,
    target: _Target,
    ran: _Executed,
    decision: Decision,
    criteria: list[dict[str, Any]],
    uses: list[NameUse],
    feedback: str,
    judgement: Judgement | None,
) -> dict[str, Any]:
    """verdict.json: the executed evidence, each criterion's status, the decision and why."""
    hard, contract = ran.hard, ran.contract
    return {
        "outcome": _outcome(decision),
        "decision": decision.action,
        "decision_reasons": list(decision.reasons),
        "verified": decision.verified,
        "committed_on": decision.committed_on or None,
        "attempt": target.attempt.n,
        "missing_files": ran.missing,
        "contract": contract.to_dict() if contract is not None else None,
        "cross_examination": ran.testimony.to_dict(target.step.checks),
        "tests": tests_evidence(ran.result),
        "task_examples": ran.examples.to_dict() if ran.examples is not None else None,
        "hardcoding": hard.summary().splitlines() if hard is not None and not hard.ok else [],
        "hardcoding_report": hard.to_dict() if hard is not None else None,
        "criteria": criteria,
        "names": [u.to_dict() for u in uses],
        "feedback": feedback,
        "lesson": judgement.lesson if judgement else "",
        "memories_recalled": list(state.get("used_memories") or []),
    }


def _record(
    res: Resources,
    state: State,
    target: _Target,
    ran: _Executed,
    decision: Decision,
    judgement: Judgement | None,
    feedback: str,
) -> dict[str, Any]:
    """Commit or not, write what the verdict teaches, and the state update."""
    step = target.step
    update: dict[str, Any] = {
        "failures": {step.id: decision.failures},
        "usage": ran.usage,
        "decision": decision.action,
        "last_verdict": {
            "step_id": step.id,
            "attempt": target.attempt.n,
            "outcome": _outcome(decision),
            "decision": decision.action,
            "feedback": feedback[:500],
        },
    }
    # What the verdict teaches; the finish node writes a run's lessons in one go.
    changes = MemoryChanges(target.session)
    earlier = MemoryChanges.from_data(target.session, state.get("learned") or []).records
    notes = _Notes(changes, earlier, list(state.get("used_memories") or []))
    if decision.action == "commit":
        _committed(res, state, target, decision, judgement, notes, update)
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
    target: _Target,
    decision: Decision,
    judgement: Judgement | None,
    notes: _Notes,
    update: dict[str, Any],
) -> None:
    step, step_ref, attempt = target.step, target.step_ref, target.attempt
    res.workspace.commit(step_ref, attempt)
    res.workspace.update_step(
        step_ref,
        status="committed",
        committed_attempt=attempt.n,
        verdict="passed" if decision.passed else "committed on task checks",
    )
    if decision.passed:  # memories in the prompt helped code that met every check
        _adjust(notes.changes, notes.used, up=True, evidence=f"step {step.id} passed its tests")
    # Each write is keyed by (run, step, attempt, kind): a re-run after a crash adds none.
    notes.written += record_interface(
        res.memory, notes.changes, step, step_ref.artifacts, earlier=notes.earlier
    )
    if judgement is not None and judgement.lesson.strip():
        notes.written += record_lesson(
            res.memory,
            notes.changes,
            "lesson",
            judgement.lesson,
            confidence=0.7,
            rationale=f"learned while committing step {step.id!r}",
            earlier=notes.earlier,
        )
    update["step_status"] = {**dict(state.get("step_status") or {}), step.id: "committed"}


def _failed(
    res: Resources,
    state: State,
    target: _Target,
    ran: _Executed,
    decision: Decision,
    feedback: str,
    notes: _Notes,
    update: dict[str, Any],
) -> None:
    step, result = target.step, ran.result
    lesson = failure_lesson(
        step, ran.contract, ran.suspect, result, ran.tests_ok, ran.testimony.tests_suspect, ran.hard
    )
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
        implicated = implicated_dependencies(target.plan, step, ran.contract, ran.suspect)
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


def _fail_step(res: Resources, state: State, target: _Target, update: dict[str, Any]) -> None:
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


def _testify(res: Resources, task: str, target: _Target, ran: _Executed, samples: int) -> None:
    """Independent implementations (uninformed drafts, fresh samples) testify on the failures.

    Sets ``ran.testimony`` and adds the samples' usage to ``ran.usage``.
    """
    assert ran.contract is not None  # only failures of a contract are cross-examined
    step, scope = target.step, target.scope
    witnesses = _uninformed_drafts(target.attempt, exclude=scope.staging / IMPL_FILE)
    spent: list[AIMessage] = []
    wanted = max(0, MIN_WITNESSES - len(witnesses))
    model = res.model("executor")
    if samples and wanted:
        artifacts = res.workspace.dependency_artifacts(target.step_ref)
        deps = dependency_lines(artifacts, lambda d: f"deps.{python_ident(d)}.impl")
        prompt = draft_prompt(task, target.plan, step, deps, "")
        fresh, spent = independent_samples(
            model,
            prompt,
            n=min(samples, wanted),
            temperature=WITNESS_TEMPERATURE,
            task=task,
            defines=step.defines,
        )
        witnesses += fresh
    testimony = cross_examine(
        checks=step.checks,
        examined=ran.contract,
        witnesses=witnesses,
        tests_failed=ran.result is not None and not ran.tests_ok,
        test_file=scope.staging / TEST_FILE,
        runner=res.runner,
        limits=res.limits,
        python_path=scope.python_path()[1:],
        defines=step.defines,
        available=target.available,
    )
    emit(
        "reflector.cross_examination",
        step_id=step.id,
        witnesses=testimony.witnesses,
        suspect=len(testimony.suspect_checks),
        tests_suspect=testimony.tests_suspect,
    )
    ran.testimony = testimony
    ran.usage = _sum_usage(ran.usage, usage_of(spent, model_name_of(model)))


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
