"""The one order of candidates: honest code, the task's checks, the contract, then own tests."""

from __future__ import annotations

from atom_agent.checks.contract import CheckResult, ContractReport
from atom_agent.selection.pool import Candidate, Drafts
from atom_agent.selection.rank import rank
from atom_agent.state import Check

SIGNATURE = Check(call="sig(add)", expect="[('a', None), ('b', None)]", origin="task")
OWN = Check(call="add(2, 3)", expect="5", origin="own")


def _report(*statuses: str) -> ContractReport:
    checks = [SIGNATURE, OWN]
    return ContractReport([CheckResult(c, s) for c, s in zip(checks, statuses, strict=True)])


def _candidate(k: int, report: ContractReport, gaming: list[str] | None = None) -> Candidate:
    return Candidate(k=k, source=f"# {k}\n", temperature=0.0, informed=False, report=report,
                     gaming=gaming or [])  # fmt: skip


def test_meeting_the_contract_and_the_drafts_own_tests_beats_the_contract_alone() -> None:
    alone, both = _report("passed", "failed"), _report("passed", "passed")
    assert rank(both) > rank(alone)
    drafts = Drafts(candidates=[_candidate(0, alone), _candidate(1, both)])
    assert drafts.best is not None and drafts.best.k == 1
    assert not drafts.passes(drafts.candidates[0])  # a failing own test: not passed


def test_an_own_test_never_outweighs_a_check_of_the_contract() -> None:
    assert rank(_report("passed", "failed")) > rank(_report("failed", "passed"))


def test_gaming_code_ranks_below_honest_code_whatever_it_passes() -> None:
    gamed = _candidate(0, _report("passed", "passed"), ["impl.py:1: lookup_table: …"])
    honest = _candidate(1, _report("failed", "failed"))
    drafts = Drafts(candidates=[gamed, honest])
    assert not drafts.passes(gamed)
    assert drafts.best is not None and drafts.best.k == 1


def test_reports_passing_the_same_checks_tie() -> None:
    assert rank(_report("passed", "failed")) == rank(_report("passed", "failed"))
    assert rank(_report("failed", "passed"), broken=0) == rank(_report("failed", "passed"))


def test_no_report_ranks_below_any_report_and_broken_tests_below_none() -> None:
    assert rank(None) < rank(_report("failed", "failed"))
    # Below the task's checks, a test kept outweighs every other check passed.
    assert rank(_report("passed", "passed"), broken=1) < rank(_report("passed", "failed"))
    assert rank(_report("passed", "passed"), broken=1) > rank(_report("failed", "passed"))
    assert rank(None, broken=0) > rank(None, broken=3)


def test_checks_ignored_count_for_nothing() -> None:
    both = _report("passed", "passed")
    assert rank(both, ignore={0}) == rank(_report("failed", "passed"))
