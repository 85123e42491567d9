"""The commit rule as one pure function: executed evidence → commit, retry, replan or fail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["commit", "retry", "replan", "fail"]
CommittedOn = Literal["all checks", "task checks", ""]


@dataclass(frozen=True)
class Evidence:
    """What the reflector executed for one attempt of one step, as plain values."""

    max_attempts: int
    """Failed attempts a step may have before it is replanned or failed."""
    max_replans: int
    """Replans the run may do."""
    failures: int = 0
    """Failed attempts of the step before this one."""
    replans: int = 0
    """Replans the run did so far."""
    missing: tuple[str, ...] = ()
    """Required files the attempt did not write."""
    tests_ok: bool = False
    """The step's own tests ran, and all passed."""
    tests_failure: str = ""
    """The first failure of the step's tests, when they failed ('' otherwise)."""
    contract_ok: bool = True
    """No runnable non-suspect check of the contract failed (true without a contract)."""
    contract_passed_any: bool = False
    """At least one check of the contract ran and held."""
    task_checks_ok: bool = False
    """Every runnable non-suspect check the task states held, one of them a value check."""
    model_disagrees: tuple[str, ...] = ()
    """The non-suspect checks of the planner model's contract that failed (described)."""
    unchecked_clauses: tuple[str, ...] = ()
    """Clauses of the task this step answers for that no check executes."""
    unexecuted_names: tuple[str, ...] = ()
    """Public names of the step no passing value check (or passing test) executed."""
    overruled: tuple[str, ...] = ()
    """Checks that ran and failed yet decide nothing, each with the stronger independent
    evidence that outranks it (the task's own check of the same call; independent
    implementations): both named, for the verdict and the report."""
    gaming: tuple[str, ...] = ()
    """Where the code answers the checks instead of the task (gaming findings, described)."""
    attempt_seconds: float | None = None
    """How long this attempt took, drafting and proving (None: not measured)."""
    seconds_left: float | None = None
    """What the run's time limit leaves for model calls (None: the run has no time limit)."""
    witnesses_cut: str = ""
    """Why the attempt heard fewer witnesses than asked ('' when it heard them all): a
    failing check they might have outvoted stands, and the verdict says so."""

    def no_time(self) -> str:
        """Why another attempt cannot finish in the time left ('' when it can, or unknown).

        An attempt cut by the time limit is thrown away whole, so one that would take longer
        than the time left (as long as this one took) is not started.
        """
        took, left = self.attempt_seconds, self.seconds_left
        if took is None or left is None or left >= took:
            return ""
        return (
            f"another attempt would not finish within the run's time limit "
            f"(this one took {took:.0f} s, {max(left, 0.0):.0f} s are left)"
        )


@dataclass(frozen=True)
class Decision:
    """What the evidence decides, and why."""

    action: Action
    """What the graph does next with the step."""
    passed: bool
    """Every executed check held: the attempt passed."""
    reasons: tuple[str, ...]
    """Why, for people: what failed, what was committed on, what stays unverified."""
    verified: bool
    """Passed, with every clause checked and every public name's result checked."""
    failures: int
    """Failed attempts of the step, this one included."""
    committed_on: CommittedOn = ""
    """``all checks`` (passed) or ``task checks`` (the task's own checks after every attempt)."""
    overruled: tuple[str, ...] = ()
    """Failing checks set aside, each with what outranks it; on a commit on the task's checks
    also every failing check and test of the model the commit goes over."""
    out_of_time: str = ""
    """Why no further attempt was started although one was allowed ('' when not): the run's
    time limit would have cut it."""


def decide(evidence: Evidence) -> Decision:
    """The commit rule.

    Commit when the attempt passed: nothing missing, nothing gamed, no trusted check failed
    (the drafts' own tests included), its tests passed and at least something executed and
    passed (its tests or a check). Otherwise retry while attempts remain, so a failing test is
    shown to the next attempt before anything is committed over it. When the attempts are
    spent, commit anyway if nothing is missing or gamed and the code meets every check the task
    itself states (the user's word outranks the model's checks and tests), labelled with the
    checks that still fail, else replan while replans remain; else fail. No retry or replan is
    started that the run's time limit would cut before it ends (:meth:`Evidence.no_time`): the
    step fails then, saying so.

    Verified only when nothing that ran against the code failed, or each failing check is
    outranked by a stronger independent one and the decision names both (``overruled``).
    """
    e = evidence
    problems = _problems(e)
    passed = not problems
    failures = e.failures + (0 if passed else 1)
    reasons = list(problems)
    action: Action
    committed_on: CommittedOn = ""
    out_of_time = ""
    overruled = list(e.overruled)
    if passed:
        action, committed_on = "commit", "all checks"
        if overruled:
            reasons.append(
                "passed over failing checks a stronger one outranks: " + "; ".join(overruled)
            )
    elif failures >= e.max_attempts and e.task_checks_ok and not e.missing and not e.gaming:
        action, committed_on = "commit", "task checks"
        disagree = "; ".join(e.model_disagrees) or "none of its checks fail"
        reasons.append(
            f"committed on the task's own checks after {failures} failed attempts: "
            f"every check the task states holds; the model's contract disagrees: {disagree}"
        )
        over = [*e.model_disagrees]
        if not e.tests_ok:
            over.append(f"the step's tests fail ({e.tests_failure or 'see the verdict'})")
        overruled += [f"{d}; outranked by every check the task states" for d in over]
    elif (failures < e.max_attempts or e.replans < e.max_replans) and (no_time := e.no_time()):
        action, out_of_time = "fail", no_time
        reasons.append(f"{failures} failed attempts: {no_time}")
    elif failures < e.max_attempts:
        action = "retry"
    elif e.replans < e.max_replans:
        action = "replan"
        reasons.append(f"{failures} failed attempts of {e.max_attempts}: replan")
    else:
        action = "fail"
        reasons.append(f"{failures} failed attempts and {e.replans} replans: no more tries")
    if not passed and e.witnesses_cut:
        reasons.append(f"cross-examination cut short: {e.witnesses_cut}")
    reasons += _unverified(e)
    verified = passed and not e.unchecked_clauses and not e.unexecuted_names
    return Decision(
        action, passed, tuple(reasons), verified, failures, committed_on, tuple(overruled),
        out_of_time,
    )  # fmt: skip


def _problems(e: Evidence) -> list[str]:
    """Why the attempt did not pass (empty when it did)."""
    out: list[str] = []
    if e.missing:
        out.append(f"missing files: {', '.join(e.missing)}")
    if e.gaming:
        out.append("the code answers the checks instead of the task: " + "; ".join(e.gaming[:3]))
    if not e.contract_ok:
        out.append("checks of the contract failed")
    if not e.tests_ok:
        out.append("the step's own tests did not pass")
    if not (e.tests_ok or e.contract_passed_any) and not out:
        out.append("nothing executed passed: no passing test, no passing check")
    return out


def _unverified(e: Evidence) -> list[str]:
    out = []
    if e.unchecked_clauses:
        out.append("not verified: no check of " + "; ".join(e.unchecked_clauses))
    if e.unexecuted_names:
        out.append("not verified: no result checked for " + ", ".join(e.unexecuted_names))
    return out
