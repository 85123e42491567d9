"""The reflector of a run on a project: the change applied, its checks and the suite run, gated.

Crash-safe by the branch: the checkout is first reset to the branch's last commit (dropping
what an interrupted trial left), and a commit already carrying this attempt's trailers means
the process died after committing: the verdict is recorded, nothing is run twice. Otherwise
the staged file goes into the checkout, the step's checks and the project's suite run there,
and :func:`decide_change` (pure) says what the evidence allows.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from atom_agent.checks.contract import ContractReport
from atom_agent.project.checks import explain
from atom_agent.project.knowledge import project_space, remember_change
from atom_agent.project.suite import Gate, SuiteResult, gate, run_suite, suite_limits
from atom_agent.resources import Resources
from atom_agent.session import SessionContext
from atom_agent.state import Plan, PlanStep, State, StepStatus
from atom_agent.telemetry import emit
from atom_agent.workspace import AttemptRef, StepRef

from ..common import dependants, plan_of, run_ref
from .common import ProjectRun, checks_in_checkout, load_project, module_of

Action = Literal["commit", "retry", "fail"]


def _outcome(action: Action, verdict: dict[str, Any]) -> str:
    """The progress display's word for a verdict: passed, committed unverified, failed."""
    if action != "commit":
        return "failed"
    return "passed" if verdict.get("verified") else "committed unverified"


@dataclass(frozen=True)
class ChangeEvidence:
    """What ran for one attempt of a project step."""

    written: bool
    """The executor staged an edited file (a parsable definition was found)."""
    checks: int
    """Runnable checks of the step (docstring and task examples)."""
    checks_passed: int
    regressions: int
    """Tests that passed in the baseline and fail now, confirmed by a rerun."""
    collected: bool
    """The suite ran and left a report."""
    last_attempt: bool
    model_checks: int = 0
    """Of `checks`, the model's reproduction tests (the rest are the project's and the task's)."""
    changed: bool = True
    """The staged file differs from the branch's: an edit that changes nothing is no step."""


@dataclass(frozen=True)
class ChangeDecision:
    """What the reflector does with an attempt, and how the commit is labelled."""

    action: Action
    verified: bool
    reason: str


def decide_change(ev: ChangeEvidence) -> ChangeDecision:
    """The commit rule of a project step: never a regression, checks first.

    - nothing staged, an edit that changes nothing, the suite no longer runs, or a
      regression: not committed (retry while attempts remain);
    - every check passes (at least one): committed, verified;
    - no check at all: committed on the regression suite alone, labelled unverified;
    - some checks fail: retried; on the last attempt committed unverified when at least one
      passes (better than the stub it replaces, the failures named), else failed — but the
      model's reproduction tests never fail a step: when they are all it has, a change they all
      reject is committed unverified on the suite, as it would be without them.
    """
    retry_or_fail: Action = "fail" if ev.last_attempt else "retry"
    if not ev.written:
        return ChangeDecision(retry_or_fail, False, "no edit could be made from the reply")
    if not ev.changed:
        return ChangeDecision(
            retry_or_fail, False, "the edit leaves the file exactly as it was: nothing changed"
        )
    if not ev.collected:
        return ChangeDecision(retry_or_fail, False, "the project's tests no longer run")
    if ev.regressions:
        return ChangeDecision(
            retry_or_fail, False, f"{ev.regressions} test(s) that passed before now fail"
        )
    if ev.checks and ev.checks_passed == ev.checks:
        written = (
            f" ({ev.model_checks} of them the model's reproduction tests)"
            if ev.model_checks
            else ""
        )
        return ChangeDecision(
            "commit", True, f"all {ev.checks} checks pass{written}, no regression"
        )
    if not ev.checks:
        return ChangeDecision(
            "commit", False, "no regression; no check executed the change (unverified)"
        )
    failing = f"{ev.checks - ev.checks_passed} of {ev.checks} checks fail"
    if not ev.last_attempt:
        return ChangeDecision("retry", False, failing)
    if ev.checks_passed:
        return ChangeDecision("commit", False, f"no regression, but {failing} (unverified)")
    if ev.model_checks == ev.checks:
        return ChangeDecision(
            "commit",
            False,
            f"no regression; the model's {ev.checks} reproduction test(s) all fail and no "
            "check of the project's covers the change (unverified)",
        )
    return ChangeDecision("fail", False, failing)


def make_project_reflector(res: Resources) -> Any:
    """The reflector node of a run on a project, closed over the run's resources."""

    def reflector(state: State) -> dict[str, Any]:
        plan = plan_of(state)
        step = next(s for s in plan.steps if s.id == state.get("current_step"))
        run = run_ref(res, state)
        project = load_project(res, run)
        if project is None:
            raise RuntimeError("reflector: the project was not opened (the planner opens it)")
        step_ref = res.workspace.step(run, step.id)
        attempt = res.workspace.attempt(step_ref, state["attempts"][step.id])
        project.checkout.reset()
        failures = dict(state.get("failures") or {}).get(step.id, 0)
        last = failures + 1 >= res.ctx.max_attempts
        verdict = _judge(res, project, step, attempt, last, _trailers(state, step, attempt))
        res.workspace.write_verdict(attempt, verdict)
        action: Action = verdict["decision"]
        update: dict[str, Any] = {
            "decision": action,
            "failures": {step.id: failures + (0 if action == "commit" else 1)},
        }
        update["step_status"] = _statuses_after(state, plan, step.id, action)
        if action == "commit":
            _commit_step(res, state["run_id"], step, step_ref, attempt, verdict)
        elif action == "fail":
            res.workspace.update_step(step_ref, status="failed", verdict="failed")
        emit(
            "reflector.verdict",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            decision=action,
            outcome=_outcome(action, verdict),
            reason=verdict["reason"],
        )
        return update

    return reflector


def _trailers(state: State, step: PlanStep, attempt: AttemptRef) -> dict[str, str]:
    """The commit trailers that name this attempt (how a crash after committing is found)."""
    return {"Atom-Run": state["run_id"], "Atom-Step": step.id, "Atom-Attempt": str(attempt.n)}


def _statuses_after(
    state: State, plan: Plan, step_id: str, action: Action
) -> dict[str, StepStatus]:
    """The steps' statuses after the verdict: committed, or failed with its dependents blocked."""
    statuses = dict(state.get("step_status") or {})
    if action == "commit":
        statuses[step_id] = "committed"
    elif action == "fail":
        statuses[step_id] = "failed"
        statuses |= dict.fromkeys(dependants(plan, step_id), "blocked")
    return statuses


def _commit_step(
    res: Resources,
    run_id: str,
    step: PlanStep,
    step_ref: StepRef,
    attempt: AttemptRef,
    verdict: dict[str, Any],
) -> None:
    """Remember the change in the project's memory space; record the step committed."""
    session = SessionContext(
        session_id=run_id,
        project_id=project_space(res.ctx.project_id, res.ctx.repo),
        run_id=run_id,
        step_id=step.id,
        attempt=attempt.n,
    )
    remember_change(res.memory, session, res.ctx.repo, step.target, verdict)
    res.workspace.commit(step_ref, attempt)
    res.workspace.update_step(
        step_ref,
        status="committed",
        committed_attempt=attempt.n,
        verdict="passed" if verdict["verified"] else "unverified",
        commit=verdict.get("commit"),
    )


def _judge(
    res: Resources,
    project: ProjectRun,
    step: PlanStep,
    attempt: AttemptRef,
    last: bool,
    trailers: dict[str, str],
) -> dict[str, Any]:
    """The attempt's verdict: recovered when its commit is already on the branch, else judged.

    Judging applies the staged edit, runs checks and suite, decides, commits on the branch.
    """
    checkout = project.checkout
    sha = checkout.committed(trailers)
    if sha is not None and attempt.verdict_json.exists():
        return res.workspace.read_verdict(attempt)  # died after the verdict was written
    if sha is not None:
        return {
            "decision": "commit",
            "verified": False,
            "commit": sha,
            "reason": "committed before a crash; its evidence was not kept",
        }
    path = step.target.partition("::")[0]
    staged = attempt.staging / path
    original = checkout.root / path  # as the branch has it: the checkout was reset
    changed = staged.is_file() and (
        not original.is_file() or staged.read_bytes() != original.read_bytes()
    )
    contract, result, verdict_gate = (
        _run_change(res, project, step, staged, path) if changed else (None, None, None)
    )
    evidence = ChangeEvidence(
        written=staged.is_file(),
        checks=len(step.checks),
        checks_passed=len(contract.passed) if contract else 0,
        model_checks=sum(1 for c in step.checks if c.origin == "planner"),
        regressions=len(verdict_gate.regressions) if verdict_gate else 0,
        # A suite that did not collect before the change either is no evidence against it.
        collected=bool(result and (result.collected_ok or not project.baseline.collected_ok)),
        last_attempt=last,
        changed=changed,
    )
    decision = decide_change(evidence)
    verdict: dict[str, Any] = {
        "decision": decision.action,
        "verified": decision.verified,
        "reason": decision.reason,
        "checks": contract.to_dict() if contract else None,
        "suite": _suite_summary(project.baseline, result, verdict_gate),
        "feedback": _feedback(decision, contract, verdict_gate, result),
    }
    if decision.action == "commit":
        shutil.copyfile(staged, checkout.root / path)  # what a test run wrote never lands
        verdict["commit"] = checkout.commit([path], f"atom: {step.title}", trailers)
    checkout.reset()
    return verdict


def _run_change(
    res: Resources, project: ProjectRun, step: PlanStep, staged: Path, path: str
) -> tuple[ContractReport | None, SuiteResult, Gate]:
    """With the staged file in the checkout, run the step's checks, then the suite and its gate.

    The checks' report is None when the step has none.
    """
    checkout = project.checkout
    contract: ContractReport | None = None
    if step.checks:
        shutil.copyfile(staged, checkout.root / path)
        module = module_of(path, project.command.python_path)
        contract = checks_in_checkout(res, project, step.checks, module)  # resets after
    shutil.copyfile(staged, checkout.root / path)
    runner, limits = res.runner.with_packages(project.packages), suite_limits(res.limits)
    result = run_suite(checkout.root, project.command, runner=runner, limits=limits)
    verdict_gate = gate(
        project.baseline,
        result,
        lambda ids: run_suite(
            checkout.root, project.command, runner=runner, limits=limits, only=ids
        ),
    )
    return contract, result, verdict_gate


def _suite_summary(
    baseline: SuiteResult, after: SuiteResult | None, result: Gate | None
) -> dict[str, Any]:
    """Test counts before and after, and what the gate found."""
    out: dict[str, Any] = {
        "before": {"passed": len(baseline.passed), "failed": len(baseline.failed)},
    }
    if after is not None:
        out["after"] = {
            "passed": len(after.passed),
            "failed": len(after.failed),
            "collected": after.collected_ok,
            "seconds": round(after.seconds, 2),
        }
    if result is not None:
        out |= {
            "regressions": result.regressions[:20],
            "flaky": result.flaky[:20],
            "fixed": result.fixed[:20],
            "new_failures": result.new_failures[:20],
        }
    return out


def _feedback(
    decision: ChangeDecision,
    contract: ContractReport | None,
    result: Gate | None,
    after: SuiteResult | None,
) -> str:
    """What the next attempt is told: the failing checks and tests, briefly."""
    if decision.action == "commit" and decision.verified:
        return ""
    lines = [decision.reason]
    lines += [explain(failed) for failed in (contract.failed if contract else [])[:5]]
    for test in (result.regressions if result else [])[:5]:
        why = _why_failed(test, after)
        lines.append(f"- the test {test} passed before your change and fails now{why}")
    if after is not None and not after.collected_ok:
        lines.append(after.output_tail[-800:])
    return "\n".join(lines)


def _why_failed(test: str, after: SuiteResult | None) -> str:
    """``": TypeError: …"``: pytest's summary line for `test` in the run's output ('' if none)."""
    for line in (after.output_tail if after is not None else "").splitlines():
        if line.startswith(("FAILED ", "ERROR ")) and test in line and " - " in line:
            return ": " + line.split(" - ", 1)[1].strip()[:200]
    return ""
