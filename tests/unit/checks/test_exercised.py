"""Which defined names an executed check or a passing test used: a label of the evidence."""

from __future__ import annotations

from atom_agent.checks.contract import CheckResult, ContractReport
from atom_agent.checks.exercised import name_uses, not_exercised, referenced_names
from atom_agent.state import Check

TESTS = """
import pytest
from impl import rle_encode as enc, rle_decode
import impl


def helper():
    return impl.rle_size("x")


def test_round_trip():
    assert rle_decode(enc("aab")) == "aab"


class TestSizes:
    def test_size(self):
        assert impl.rle_size("aa") == 1
"""


def _report(*results: tuple[str, str, str, str]) -> ContractReport:
    return ContractReport(
        results=[
            CheckResult(Check(call=call, expect=expect, raises=raises), status)  # type: ignore[arg-type]
            for call, expect, raises, status in results
        ]
    )


def test_value_checks_error_checks_and_tests_are_told_apart() -> None:
    contract = _report(
        ("rle_decode('2a')", "'aa'", "", "passed"),
        ("rle_encode(5)", "", "TypeError", "passed"),
        ("rle_encode('')", "''", "", "failed"),  # ran, did not hold: no evidence for it
        ("rle_size('a')", "1", "", "not_run"),
    )
    uses = {u.name: u for u in name_uses(["rle_encode", "rle_decode", "rle_size"], contract)}
    assert (uses["rle_decode"].value_checks, uses["rle_decode"].status) == (1, "exercised")
    assert (uses["rle_encode"].error_checks, uses["rle_encode"].status) == (1, "errors only")
    assert uses["rle_size"].status == "unexercised"
    assert not_exercised(u.to_dict() for u in uses.values()) == [
        "rle_encode (errors only)",
        "rle_size (unexercised)",
    ]


def test_passing_tests_count_with_aliases_and_attributes_failing_ones_do_not() -> None:
    names = ["rle_encode", "rle_decode", "rle_size"]
    uses = name_uses(names, None, tests_source=TESTS, tests_passed=True)
    assert [(u.name, u.tests) for u in uses] == [
        ("rle_encode", 1), ("rle_decode", 1), ("rle_size", 1),
    ]  # fmt: skip
    # a helper that is not a test does not count; a failed suite counts for nothing
    assert all(u.tests == 0 for u in name_uses(names, None, tests_source=TESTS))


def test_suspect_checks_and_unparseable_sources_count_for_nothing() -> None:
    contract = _report(("f(1)", "2", "", "passed"))
    assert name_uses(["f"], contract, ignore={0})[0].status == "unexercised"
    assert name_uses(["f"], None, tests_source="def test_(:", tests_passed=True)[0].tests == 0
    assert referenced_names("x = (") == set()
