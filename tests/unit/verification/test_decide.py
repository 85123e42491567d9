"""The commit rule as a table: evidence in, action and verified out (no graph, no model)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from atom_agent.verification.decide import Evidence, decide

# A first attempt whose tests and contract all passed.
PASSING = Evidence(
    max_attempts=3, max_replans=1, tests_ok=True, contract_passed_any=True, task_checks_ok=True
)
# A last attempt (two failures before) whose planner-model check failed, task checks held.
SPENT = replace(
    PASSING,
    failures=2,
    tests_ok=False,
    contract_ok=False,
    model_disagrees=("add(1, 1) == 3 (expected 3, got 2)",),
)

CASES = {
    "everything passed": (PASSING, "commit", True),
    "a name no value check ran": (
        replace(PASSING, unexecuted_names=("neg (unexercised)",)),
        "commit",
        False,
    ),
    "a clause without a check": (
        replace(PASSING, unchecked_clauses=("c2 (the result is sorted)",)),
        "commit",
        False,
    ),
    "missing files": (replace(PASSING, missing=("test.py",), tests_ok=False), "retry", False),
    "hard-coded": (replace(PASSING, hard_ok=False), "retry", False),
    "a failed check, attempts left": (replace(SPENT, failures=1), "retry", False),
    "task checks hold, attempts spent": (SPENT, "commit", False),
    "no task value check, attempts spent": (replace(SPENT, task_checks_ok=False), "replan", False),
    "task checks hold but hard-coded": (replace(SPENT, hard_ok=False), "replan", False),
    "task checks hold but a file missing": (replace(SPENT, missing=("test.py",)), "replan", False),
    "no task checks, replans spent": (
        replace(SPENT, task_checks_ok=False, replans=1),
        "fail",
        False,
    ),
    "own tests fail, last attempt": (
        replace(PASSING, failures=2, tests_ok=False, task_checks_ok=False),
        "replan",
        False,
    ),
}

# Run-ending: attempts and replans spent, no task value check; the planner model's contract
# holds 3 to 1, the one failure its own; the plain answer has nothing for the step.
LAST = replace(
    SPENT, task_checks_ok=False, replans=1, checks_held=3, checks_failed=1,
    value_check_held=True, plain_lacks=("transfer",),
)  # fmt: skip
CASES |= {
    "last resort: the plain answer lacks the step": (LAST, "commit", False),
    "last resort, replans left: replan first": (replace(LAST, replans=0), "replan", False),
    "the plain answer has the step: its floor stands": (
        replace(LAST, plain_lacks=()),
        "fail",
        False,
    ),
    "a task check fails": (replace(LAST, task_check_failed=True), "fail", False),
    "as many fail as hold": (replace(LAST, checks_held=1), "fail", False),
    "only error cases hold": (replace(LAST, value_check_held=False), "fail", False),
    "a failure not the model's (a timeout)": (replace(LAST, checks_failed=2), "fail", False),
    "last resort but hard-coded": (replace(LAST, hard_ok=False), "fail", False),
    "last resort but a file missing": (replace(LAST, missing=("test.py",)), "fail", False),
}


@pytest.mark.parametrize(("evidence", "action", "verified"), CASES.values(), ids=CASES.keys())
def test_the_commit_rule(evidence: Evidence, action: str, verified: bool) -> None:
    decision = decide(evidence)
    assert (decision.action, decision.verified) == (action, verified)
    assert decision.reasons or decision.verified  # an unverified decision always says why


def test_a_commit_on_the_tasks_checks_names_the_model_checks_that_disagree() -> None:
    decision = decide(SPENT)
    assert decision.committed_on == "task checks" and not decision.passed
    assert decision.failures == 3
    assert any(
        "the model's contract disagrees: add(1, 1) == 3 (expected 3, got 2)" in r
        for r in decision.reasons
    )


def test_unchecked_clauses_and_unexecuted_names_are_reasons_not_actions() -> None:
    evidence = replace(PASSING, unchecked_clauses=("c2 (sorted)",), unexecuted_names=("g (x)",))
    decision = decide(evidence)
    assert decision.action == "commit" and decision.committed_on == "all checks"
    assert decision.reasons == (
        "not verified: no check of c2 (sorted)",
        "not verified: no result checked for g (x)",
    )


def test_a_passing_attempt_records_no_failure() -> None:
    assert decide(replace(PASSING, failures=2)).failures == 2
    assert decide(replace(SPENT, failures=0)).failures == 1


def test_a_last_resort_commit_says_what_fails_and_what_the_plain_answer_lacks() -> None:
    decision = decide(LAST)
    assert (decision.action, decision.committed_on, decision.passed) == (
        "commit",
        "most checks",
        False,
    )
    reason = next(r for r in decision.reasons if "last resort" in r)
    assert "the model's plain answer has no transfer" in reason
    assert "3 checks hold" in reason and "add(1, 1) == 3 (expected 3, got 2)" in reason
