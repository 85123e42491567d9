"""The rule table: every row fires on its own positive sentence and not on its negative one."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.contract import run_contract
from atom_agent.checks.gaming import GAMING_CRITERION, gaming_findings
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check, Clause
from atom_agent.verification.clauses import coverage, split_clauses, task_clauses
from atom_agent.verification.rules import RULES, Rule


def _fired(task: str) -> dict[str, list[Check]]:
    """Rule name → the checks of the clauses it fired on."""
    out: dict[str, list[Check]] = {}
    for clause in task_clauses(task):
        for name in clause.rules:
            out.setdefault(name, []).extend(clause.checks)
    return out


def test_the_table_names_each_rule_once_with_examples_of_its_own() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for row in RULES:
        assert row.positive.strip() and row.negative.strip() and row.positive != row.negative
        if row.family in ("condition", "described"):
            assert row.value is not None, row.name


@pytest.mark.parametrize(
    "row", [r for r in RULES if r.family not in ("meta", "gaming")], ids=lambda r: r.name
)
def test_a_rule_builds_its_check_from_its_positive_example_and_not_from_its_negative(
    row: Rule,
) -> None:
    fired = _fired(row.positive)
    assert row.name in fired, f"{row.name} did not fire on: {row.positive}"
    assert any(c.criterion == row.criterion for c in fired[row.name]), fired[row.name]
    assert row.name not in _fired(row.negative), f"{row.name} fired on: {row.negative}"


@pytest.mark.parametrize("row", [r for r in RULES if r.family == "gaming"], ids=lambda r: r.name)
def test_a_gaming_rule_fails_its_positive_code_and_passes_its_negative(row: Rule) -> None:
    def findings(example: str) -> list[str]:
        task, code = example.split("\n# code\n")
        checks = [c for clause in task_clauses(task) for c in clause.checks]
        assert checks, f"the task of {row.name} states no check"
        return [f.kind for f in gaming_findings({"impl.py": code}, checks, ["add"])]

    assert findings(row.positive), f"{row.name} found nothing in: {row.positive}"
    assert findings(row.negative) == [], f"{row.name} fired on: {row.negative}"
    assert row.criterion == GAMING_CRITERION


@pytest.mark.parametrize("row", [r for r in RULES if r.family == "meta"], ids=lambda r: r.name)
def test_a_request_for_tests_is_no_clause(row: Rule) -> None:
    assert len(task_clauses(row.positive)) == len(split_clauses(row.positive)) - 1
    assert len(task_clauses(row.negative)) == len(split_clauses(row.negative))


def test_a_request_for_tests_that_states_a_property_stays_a_clause() -> None:
    task = (
        "Write to_hex(n: int) -> str and from_hex(text: str) -> int. Include tests covering "
        "round trips for non-negative integers."
    )
    (last,) = [c for c in task_clauses(task) if c.text.startswith("Include")]
    assert last.rules == ["round_trip_named"]
    assert last.checks[0].label == "from_hex(to_hex(n)) == n for generated n"


def test_a_construction_the_task_only_describes_is_called_by_position() -> None:
    task = (
        "Write an LRUCache class with get(key, default=None), put(key, value), a capacity "
        "given at construction (ValueError if < 1), and len()."
    )
    (clause,) = task_clauses(task)
    errors = [c.describe() for c in clause.checks if c.raises]
    assert errors == ["LRUCache(0) raises ValueError"]
    assert {"constructor_argument", "elided_subject", "param_below"} <= set(clause.rules)


@pytest.mark.parametrize(
    "sentence",
    [
        "unpacking after packing a list gives back the list",  # the order is not "then"
        "packing then unpacking is slow",  # nothing comes back
    ],
)
def test_a_round_trip_in_words_needs_its_order_and_its_return(sentence: str) -> None:
    task = f"Write pack(items: list[int]) -> bytes and unpack(raw: bytes) -> list[int]; {sentence}."
    assert not any(c.criterion.startswith("the properties") for c in _all_checks(task))


def test_a_round_trip_in_words_draws_from_a_stated_type_the_clause_does_not_name() -> None:
    task = (
        "Write pack(items: list[str]) -> bytes and unpack(raw: bytes) -> list[str]; packing "
        "then unpacking gives back the list."
    )
    (prop,) = [c for c in _all_checks(task) if c.criterion.startswith("the properties")]
    assert prop.label == "unpack(pack(items)) == items for generated items"
    assert "@given(st.lists(st.text(" in prop.call


SHIFT = (
    "Write shift(text: str) -> str and unshift(text: str) -> str that move each letter one "
    "place along the alphabet and back. Shifting a word then unshifting it returns the "
    "original, for any string of lowercase letters."
)
ROTATE = """
def shift(text):
    return "".join(chr((ord(c) - 97 + 1) % 26 + 97) for c in text)
def unshift(text):
    return "".join(chr((ord(c) - 97 - 1) % 26 + 97) for c in text)
"""
NO_WRAP = ROTATE.replace("chr((ord(c) - 97 - 1) % 26 + 97)", "chr(ord(c) - 1)")


def test_a_round_trip_in_words_runs_over_generated_inputs(tmp_path: Path) -> None:
    (prop,) = [c for c in _all_checks(SHIFT) if c.criterion.startswith("the properties")]
    assert prop.label == "unshift(shift(text)) == text for generated text"
    statuses = []
    for name, source in (("right", ROTATE), ("no_wrap", NO_WRAP)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "impl.py").write_text(source)
        report = run_contract(
            [prop], staging=tmp_path / name, runner=default_runner(), limits=Limits(timeout_s=30)
        )
        statuses.append(report.results[0].status)
    assert statuses == ["passed", "failed"]  # 'z' shifts to 'a', which unshifts to '`'


def _all_checks(task: str) -> list[Check]:
    return [c for clause in task_clauses(task) for c in clause.checks]


def test_coverage_reports_the_rules_of_each_clause_for_run_json() -> None:
    clauses = [
        Clause(
            id="c1",
            text="one",
            kind="error",
            checks=[Check(call="f(1)", raises="E")],
            rules=["param_below"],
        ),
        Clause(id="c2", text="two", kind="behaviour"),
    ]
    report = coverage(clauses, {"c1": ["passed"]}).to_dict()
    assert report["rules"] == {"c1": ["param_below"]}
    assert report["verified"] == ["c1"] and report["unchecked"] == ["c2"]
