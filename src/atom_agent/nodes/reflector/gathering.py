"""What the reflector executes for an attempt, and the plain evidence it hands to ``decide``.

The attempt's tests, its contract, and the testimony of independent implementations on
what failed; then :func:`evidence_of` reduces them to the plain values of
:class:`~atom_agent.verification.decide.Evidence`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.exercised import NameUse, name_uses, not_exercised
from atom_agent.checks.gaming import Finding, gaming_findings, staged_files
from atom_agent.checks.own import load_own, merged, outranking, own_checks
from atom_agent.checks.probe import confirmed, probes
from atom_agent.context import Context
from atom_agent.names import defined_in_code
from atom_agent.resources import Resources
from atom_agent.sandbox import RunResult
from atom_agent.session import SessionContext
from atom_agent.state import (
    IMPL_FILE,
    REQUIRED_FILES,
    TEST_FILE,
    Check,
    DraftsSummary,
    Plan,
    PlanStep,
    State,
)
from atom_agent.telemetry import emit
from atom_agent.verification.crossexam import Testimony, cross_examine
from atom_agent.verification.decide import Evidence
from atom_agent.verification.evidence import first_failure
from atom_agent.workspace import AttemptRef, RunRef, StepRef

from ..common import (
    AttemptScope,
    attempt_scope,
    available_names,
    plan_of,
    run_ref,
    step_session,
)

_FAILED = ("failed", "error", "timeout")


@dataclass(frozen=True)
class Target:
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
class Executed:
    """What running the attempt's code gave: its tests, its contract and its own tests."""

    missing: list[str]
    result: RunResult | None
    contract: ContractReport | None
    testimony: Testimony = field(default_factory=Testimony)
    checks: list[Check] = field(default_factory=list)
    """What the contract ran: the step's checks, then the drafts' own tests."""
    outranked: dict[int, str] = field(default_factory=dict)
    """Own tests a check the task states contradicts (index → that check, described)."""
    gaming: list[Finding] = field(default_factory=list)
    """Where the staged code or tests answer the checks instead of the task."""

    @property
    def tests_ok(self) -> bool:
        """The step's own tests ran, and all passed."""
        return tests_passed(self.result)

    @property
    def suspect(self) -> set[int]:
        """Indexes of the checks independent implementations contradicted."""
        return set(self.testimony.suspect_checks)

    @property
    def set_aside(self) -> set[int]:
        """Checks that decide nothing: the suspect ones, and own tests the task outranks."""
        return self.suspect | set(self.outranked)


def target_of(res: Resources, state: State) -> Target:
    """The current step's latest attempt, its scope and what its dependencies define."""
    plan = plan_of(state)
    step = next(s for s in plan.steps if s.id == state.get("current_step"))
    run = run_ref(res, state)
    step_ref = res.workspace.step(run, step.id)
    attempt = res.workspace.attempt(step_ref, (state.get("attempts") or {})[step.id])
    return Target(
        plan=plan,
        step=step,
        run=run,
        step_ref=step_ref,
        attempt=attempt,
        scope=attempt_scope(res.workspace, step_ref, attempt),
        available=available_names(res.workspace.dependency_artifacts(step_ref)),
        session=step_session(state, res.ctx, step.id, attempt.n),
    )


def execute(res: Resources, target: Target) -> Executed:
    """Run the attempt's tests, its contract with the drafts' own tests, and the gaming pass.

    An own test a check the task states contradicts still runs (the verdict says what it
    gave), but it is set aside: where the task and a model's test disagree, the task wins.
    """
    step, staging = target.step, target.attempt.staging
    own = merged(step.checks, load_own(target.attempt.path), _extra_tests(staging, step.defines))
    checks = [*step.checks, *own]
    outranked = {
        len(step.checks) + k: by.describe()
        for k, c in enumerate(own)
        if (by := outranking(c, step.checks)) is not None
    }
    python_path = target.scope.python_path()
    missing = [f for f in REQUIRED_FILES if not (staging / f).is_file()]
    has_impl = IMPL_FILE not in missing
    result: RunResult | None = None
    if not missing:
        result = res.runner.run_pytest(
            cwd=staging, limits=res.limits, targets=[TEST_FILE], python_path=python_path
        )
    contract: ContractReport | None = None
    if checks and has_impl:
        contract = run_contract(
            checks,
            staging=staging,
            runner=res.runner,
            limits=res.limits,
            python_path=python_path,
            defines=step.defines,
            available=target.available,
        )
    gaming = _gaming(res, target, checks) if has_impl else []
    return Executed(missing, result, contract, checks=checks, outranked=outranked, gaming=gaming)


def _extra_tests(staging: Path, defines: list[str]) -> list[Check]:
    """Own tests the tool loop wrote beside the step's checks (``test_*.py`` but test.py).

    test.py is the step's checks, staged read-only, or the model's tests run as they are; a
    test file of its own next to them is read back like a draft's tests.
    """
    found: list[Check] = []
    for path in sorted(staging.glob("test*.py")):
        if path.name != TEST_FILE and path.is_file():
            found += own_checks(path.read_text(encoding="utf-8", errors="replace"), defines)
    return found


def _gaming(res: Resources, target: Target, checks: list[Check]) -> list[Finding]:
    """The gaming pass on the staged files, and its run on unseen inputs where the AST points.

    The run costs one sandboxed process, only for code keyed on a check's input.
    """
    step, staging = target.step, target.attempt.staging
    files = staged_files(staging)
    found = gaming_findings(files, checks, step.defines)
    unseen = probes(files[IMPL_FILE], checks, step.defines)
    if unseen:
        report = run_contract(
            unseen,
            staging=staging,
            runner=res.runner,
            limits=res.limits,
            python_path=target.scope.python_path(),
            defines=step.defines,
            available=target.available,
        )
        found += confirmed(report, checks, step.defines)
    return found


def evidence_of(
    ctx: Context,
    state: State,
    target: Target,
    ran: Executed,
    uses: list[NameUse],
    timing: tuple[float | None, float | None] = (None, None),
) -> Evidence:
    """The plain values :func:`decide` rules on; `timing`: the attempt's seconds, those left."""
    contract, suspect = ran.contract, ran.set_aside
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
        tests_failure="" if ran.tests_ok or ran.result is None else first_failure(ran.result),
        contract_ok=contract is None or contract.holds(ignore=suspect),
        contract_passed_any=contract is not None and bool(contract.passed),
        # A check a user gave is the user's word too: failing one is never outvoted.
        task_checks_ok=task_ok and not any(r.check.origin == "user" for r in trusted_failed),
        model_disagrees=tuple(
            ("the drafts' own test " if r.check.origin == "own" else "")
            + f"{r.check.describe()[:160]} ({(r.reason or r.got)[:120]})"
            for r in trusted_failed
            if r.check.origin in ("planner", "own")
        ),
        unchecked_clauses=tuple(unchecked_clauses(target.plan, target.step)),
        unexecuted_names=tuple(not_exercised(public)),
        overruled=tuple(overruled(ran)),
        gaming=tuple(f.describe() for f in ran.gaming),
        attempt_seconds=timing[0],
        seconds_left=timing[1],
        witnesses_cut=_cut(state.get("drafts"), target),
    )


def _cut(drafts: DraftsSummary | None, target: Target) -> str:
    """Why this attempt heard fewer witnesses than asked ('' when it heard them all)."""
    if drafts is None or (drafts["step_id"], drafts["attempt"]) != (
        target.step.id,
        target.attempt.n,
    ):
        return ""
    return drafts.get("cut", "")


def overruled(ran: Executed) -> list[str]:
    """Each check that ran and failed yet decides nothing, with what outranks it: both named.

    An own test the task's check of the same call contradicts; a check every independent
    implementation contradicted (suspect).
    """
    if ran.contract is None:
        return []
    out = []
    for i, r in enumerate(ran.contract.results):
        if r.status not in _FAILED or i not in ran.set_aside:
            continue
        who = "the drafts' own test" if r.check.origin == "own" else "the model's check"
        failed = f"{who} `{r.check.describe()[:160]}` failed ({(r.reason or r.got)[:120]})"
        if i in ran.outranked:
            out.append(f"{failed}; outranked by the task's own check `{ran.outranked[i][:160]}`")
        else:
            why = ran.testimony.reasons.get(i, "independent implementations contradict it")
            out.append(f"{failed}; outranked by independent implementations: {why[:200]}")
    return out


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


def tests_passed(result: RunResult | None) -> bool:
    """The pytest run ended normally, ran tests, and none failed or errored."""
    if result is None or result.tests is None or not result.ok:
        return False
    t = result.tests
    return t.passed > 0 and t.failed == 0 and t.errors == 0


def name_uses_of(
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


def testify(res: Resources, target: Target, ran: Executed, drafts: DraftsSummary | None) -> None:
    """The attempt's independent implementations testify on the failures (``ran.testimony``).

    `drafts` is the state's summary of the attempt's drafting (the executor's): its witnesses
    are the samples never shown a check. No fresh sample is drawn here: on every set
    measured, fresh samples drawn by the reflector changed which label a run ended with, never
    which code it handed back (docs/measurements.md).
    """
    assert ran.contract is not None  # only failures of a contract are cross-examined
    step, scope = target.step, target.scope
    witnesses = _witnesses(drafts, target, exclude=scope.staging / IMPL_FILE)
    testimony = cross_examine(
        checks=ran.checks,
        examined=ran.contract,
        witnesses=witnesses,
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
    )
    ran.testimony = testimony


def _witnesses(drafts: DraftsSummary | None, target: Target, exclude: Path) -> list[str]:
    """This attempt's independent witnesses among its other candidates.

    Witnesses were written before any check result was shown and differ from the examined
    code. A summary of another attempt (none was drafted in this one) gives none.
    """
    attempt = target.attempt
    if drafts is None or (drafts["step_id"], drafts["attempt"]) != (target.step.id, attempt.n):
        return []
    examined = exclude.read_text(errors="replace") if exclude.is_file() else None
    witnesses: list[str] = []
    for candidate in drafts["candidates"]:
        folder = candidate["folder"]
        if folder is None or candidate["k"] == drafts["kept"] or candidate["informed"]:
            continue
        impl = attempt.path / folder / IMPL_FILE
        if not impl.is_file():
            continue
        source = impl.read_text(errors="replace")
        if source != examined:
            witnesses.append(source)
    return witnesses
