"""Errors stated as conditions on parameters become calls that meet them, run in the sandbox."""

from __future__ import annotations

from pathlib import Path

from atom_agent.checks.contract import run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.verification.clauses import ERROR_CRITERION, task_clauses

CHUNK = (
    "Write chunk(items: list[int], size: int, pad: int = 0) -> list[list[int]] that splits items "
    "into lists of size, the last one padded with pad. Raise ValueError when items is empty, "
    "when any item is negative, or when size is less than 1. For example, chunk([1, 2, 3], 2) "
    "returns [[1, 2], [3, 0]]. Include tests."
)
RIGHT = """def chunk(items, size, pad=0):
    if not items or size < 1 or any(i < 0 for i in items):
        raise ValueError("bad input")
    out = [items[i:i + size] for i in range(0, len(items), size)]
    out[-1] = out[-1] + [pad] * (size - len(out[-1]))
    return out
"""
NO_CHECKS = RIGHT.replace('    if not items or size < 1 or any(i < 0 for i in items):\n'
                          '        raise ValueError("bad input")\n', "")  # fmt: skip


def conditions(task: str) -> list[str]:
    return [
        c.describe()
        for clause in task_clauses(task)
        for c in clause.checks
        if c.criterion == ERROR_CRITERION and c.origin == "task"
    ]


def test_each_condition_on_a_parameter_is_one_call_from_the_worked_example() -> None:
    assert conditions(CHUNK) == [
        "chunk(items=[], size=2, pad=0) raises ValueError",
        "chunk(items=[1, 2, -1], size=2, pad=0) raises ValueError",
        "chunk(items=[1, 2, 3], size=0, pad=0) raises ValueError",
    ]


def test_the_checks_pass_on_code_that_meets_the_clause_and_fail_on_code_that_does_not(
    tmp_path: Path,
) -> None:
    checks = [c for clause in task_clauses(CHUNK) for c in clause.checks
              if c.criterion == ERROR_CRITERION]  # fmt: skip
    statuses = {}
    for name, source in (("right", RIGHT), ("unchecked", NO_CHECKS)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "impl.py").write_text(source)
        report = run_contract(
            checks, staging=tmp_path / name, runner=default_runner(), limits=Limits(timeout_s=30.0)
        )
        statuses[name] = [r.status for r in report.results]
    assert statuses["right"] == ["passed"] * 3
    # An empty list raises IndexError, a negative item goes through; size 0 happens to raise
    # ValueError in range().
    assert statuses["unchecked"] == ["error", "failed", "passed"]


def test_constructors_and_methods_of_a_class_whose_construction_is_stated() -> None:
    task = (
        "Write a Pager class. Pager(lines: list[str], per_page: int = 10) keeps the lines; a "
        "negative per_page raises ValueError. page(number: int) -> list[str] returns one page. "
        "If number is less than 1, page raises IndexError. window(low: int, high: int) -> "
        "list[str] returns lines low to high; if low is not less than high, window raises "
        "ValueError."
    )
    assert conditions(task) == [
        "Pager(lines=['a', 'b'], per_page=-1) raises ValueError",
        "obj = Pager(lines=['a', 'b'], per_page=10) ; obj.page(number=0) raises IndexError",
        "obj = Pager(lines=['a', 'b'], per_page=10) ; obj.window(low=2, high=2) raises ValueError",
    ]


def test_what_is_not_read_with_certainty_is_no_check() -> None:
    # A method of a class whose construction the task does not state: no object to call it on.
    assert (
        conditions(
            "Write a Grid class built from rows. cell(x: int, y: int) -> int returns one cell; "
            "a negative x raises IndexError."
        )
        == []
    )
    # Two exceptions in one clause: which condition raises which is not certain.
    assert (
        conditions(
            "Write get(key: str, n: int) -> str. An empty key raises KeyError and a negative n "
            "raises ValueError."
        )
        == []
    )
    # Another parameter without a type, default or example: no valid call to start from.
    assert conditions("Write pad(text, width). A negative width raises ValueError.") == []
    # An input described without a parameter: the only parameter of that type gets it.
    assert conditions(
        "Write parse(text: str) -> int. Malformed input (a letter, an empty string) raises "
        "ValueError."
    ) == ["parse(text='') raises ValueError"]


def test_a_numeric_condition_on_an_unannotated_parameter_is_met_by_a_plain_number() -> None:
    """-1 and 0 are numbers of either type; the other arguments still need valid values."""
    assert conditions("Write scale(factor) -> float. A negative factor raises ValueError.") == [
        "scale(factor=-1) raises ValueError"
    ]
    assert conditions(
        "Write repeat(word: str, times). times has to be a positive number, else repeat raises "
        "ValueError."
    ) == ["repeat(word='a', times=0) raises ValueError"]
