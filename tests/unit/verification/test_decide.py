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

OWN_FAILS = "the drafts' own test add(2, 3) == 5 (expected 5, got -1)"
LOOKUP = "impl.py:1: lookup_table: a table of 2 entries holds the checks' answers"
OUTRANKED = (
    "the drafts' own test `add(2, 3) == 6` failed (expected 6, got 5); outranked by the task's "
    "own check `add(2, 3) == 5`"
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
    "a failed check, attempts left": (replace(SPENT, failures=1), "retry", False),
    "task checks hold, attempts spent": (SPENT, "commit", False),
    "no task value check, attempts spent": (replace(SPENT, task_checks_ok=False), "replan", False),
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
    "a drafts' own test fails, attempts left": (
        replace(PASSING, contract_ok=False, model_disagrees=(OWN_FAILS,)),
        "retry",
        False,
    ),
    "gamed code, attempts left": (replace(PASSING, gaming=(LOOKUP,)), "retry", False),
    "gamed code meeting the task's checks, attempts spent": (
        replace(SPENT, gaming=(LOOKUP,)),
        "replan",
        False,
    ),
    "a failing own test the task outranks": (
        replace(PASSING, overruled=(OUTRANKED,)),
        "commit",
        True,
    ),
    "attempts left, but less time left than an attempt takes": (
        replace(SPENT, failures=1, attempt_seconds=40.0, seconds_left=25.0),
        "fail",
        False,
    ),
    "attempts left and time enough for one": (
        replace(SPENT, failures=1, attempt_seconds=40.0, seconds_left=41.0),
        "retry",
        False,
    ),
    "time up already, attempts left": (
        replace(SPENT, failures=1, attempt_seconds=40.0, seconds_left=-3.0),
        "fail",
        False,
    ),
    "a replan that would not finish in time": (
        replace(SPENT, task_checks_ok=False, attempt_seconds=30.0, seconds_left=10.0),
        "fail",
        False,
    ),
    "no time limit: the attempt's length decides nothing": (
        replace(SPENT, failures=1, attempt_seconds=400.0, seconds_left=None),
        "retry",
        False,
    ),
    "out of time, but a passing attempt is committed": (
        replace(PASSING, attempt_seconds=40.0, seconds_left=1.0),
        "commit",
        True,
    ),
    "out of time, attempts spent, the task's checks hold: committed as before": (
        replace(SPENT, attempt_seconds=40.0, seconds_left=1.0),
        "commit",
        False,
    ),
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


def test_a_commit_over_a_failing_check_names_it_and_what_outranks_it() -> None:
    passed = decide(replace(PASSING, overruled=(OUTRANKED,)))
    assert passed.overruled == (OUTRANKED,)
    assert any("add(2, 3) == 6" in r and "add(2, 3) == 5" in r for r in passed.reasons)
    on_task = decide(replace(SPENT, tests_ok=True, model_disagrees=(OWN_FAILS,)))
    assert on_task.committed_on == "task checks" and not on_task.verified
    assert on_task.overruled == (f"{OWN_FAILS}; outranked by every check the task states",)


def test_gaming_is_a_problem_of_its_own_that_names_the_finding() -> None:
    decision = decide(replace(PASSING, gaming=(LOOKUP,)))
    assert not decision.passed and not decision.verified
    assert decision.reasons[0] == f"the code answers the checks instead of the task: {LOOKUP}"


def test_a_commit_on_the_tasks_checks_over_failing_tests_names_their_first_failure() -> None:
    decision = decide(replace(SPENT, tests_failure="FAILED test.py::test_add - assert -1 == 5"))
    assert decision.committed_on == "task checks"
    assert decision.overruled[-1] == (
        "the step's tests fail (FAILED test.py::test_add - assert -1 == 5); outranked by every "
        "check the task states"
    )


def test_a_step_out_of_time_says_so_with_both_figures() -> None:
    decision = decide(replace(SPENT, failures=1, attempt_seconds=42.4, seconds_left=17.2))
    assert decision.action == "fail"
    why = " ".join(decision.reasons)
    assert "2 failed attempts" in why
    assert "would not finish within the run's time limit" in why
    assert "took 42 s, 17 s are left" in why


def test_a_cross_examination_the_time_limit_cut_is_named_beside_what_failed() -> None:
    cut = "time limit: 50.0s of 50.0s (5 x): 1 of 2 witnesses heard"
    failed = decide(replace(SPENT, failures=1, seconds_left=0.0, attempt_seconds=20.0,
                            witnesses_cut=cut))  # fmt: skip
    assert failed.action == "fail" and not failed.verified
    assert f"cross-examination cut short: {cut}" in failed.reasons
    # A passing attempt needed no witness: the cut is no reason of its verdict.
    assert not any("cut short" in r for r in decide(replace(PASSING, witnesses_cut=cut)).reasons)
