"""Consensus among candidates: when most of them outvote a model-written check, and when not."""

from __future__ import annotations

from atom_agent.checks.contract import CheckResult, ContractReport
from atom_agent.state import Check
from atom_agent.verification.crossexam import consensus

SUM = Check(call="f(1, 2)", expect="3", origin="planner")
WRONG = Check(call="f(2, 2)", expect="5", origin="planner")  # the model miscalculated
STATED = Check(call="f(0, 0)", expect="1", origin="task")


def report(*results: tuple[Check, str, str]) -> ContractReport:
    return ContractReport(results=[CheckResult(c, status, got=got) for c, status, got in results])


def test_a_check_most_working_candidates_answer_alike_is_discounted() -> None:
    mine = report((SUM, "passed", "3"), (WRONG, "failed", "4"))
    others = [report((SUM, "passed", "3"), (WRONG, "failed", "4")) for _ in range(2)]
    others.append(report((SUM, "failed", "2"), (WRONG, "failed", "0")))
    assert list(consensus(mine, others)) == [1]
    assert "3 of 4 candidates give 4 too" in consensus(mine, others)[1]


def test_no_discount_without_a_majority_of_three_or_when_a_candidate_meets_it() -> None:
    mine = report((SUM, "passed", "3"), (WRONG, "failed", "4"))
    two = [report((SUM, "passed", "3"), (WRONG, "failed", "4"))]
    assert consensus(mine, two) == {}  # 2 of 2: too few
    met = [*two, report((SUM, "passed", "3"), (WRONG, "passed", "5"))] * 2
    assert consensus(mine, met) == {}  # some candidate meets it: it can be met


def test_code_that_fails_everything_alike_outvotes_nothing() -> None:
    # A model that writes the same wrong code every time agrees with itself: no evidence.
    mine = report((WRONG, "failed", "4"))
    same = [report((WRONG, "failed", "4")) for _ in range(4)]
    assert consensus(mine, same) == {}
    # Nor when a check the task states fails on the examined code.
    stated = report((STATED, "failed", "0"), (SUM, "passed", "3"), (WRONG, "failed", "4"))
    alike = [report((STATED, "failed", "0"), (SUM, "passed", "3"), (WRONG, "failed", "4"))] * 3
    assert consensus(stated, alike) == {}


def test_objects_that_differ_only_in_their_address_vote_alike() -> None:
    eq = Check(call="M([[1, 2]])", expect="M([[2, 1]])", origin="planner")
    mine = report((SUM, "passed", "3"), (eq, "failed", "<impl.M object at 0x7f01>"))
    others = [report((SUM, "passed", "3"), (eq, "failed", f"<impl.M object at 0x7f0{i}>"))
              for i in range(2, 5)]  # fmt: skip
    assert list(consensus(mine, others)) == [1]
