"""What a task says a call gives or raises on a new object or one stated value, as checks."""

from __future__ import annotations

from pathlib import Path

from atom_agent.checks.contract import run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.verification.clauses import task_clauses
from atom_agent.verification.outcomes import OUTCOME_CRITERION

LIBRARY = (
    "Write a Library class; Library() takes no arguments. add_book(isbn: str, copies: int = 1) "
    "-> int adds copies and returns the new total; copies must be positive, otherwise add_book "
    "raises ValueError. copies_of(isbn: str) -> int returns the number of copies, or 0 for a "
    "book it does not know. lend(isbn: str) -> int lends one copy and returns the loan's id; "
    "lending a book it does not know raises KeyError. history(member: str | None = None) -> "
    "list[str] returns the isbns lent, oldest first (a member with no loans gives []). "
    "undo_last() -> bool takes back the newest loan and returns True, or returns False when "
    "there is nothing to undo. due(loan_id: int) -> int returns the due day for a current loan "
    "and raises LookupError otherwise. search(prefix: str, limit: int = 5) -> list[str] returns "
    "the isbns that start with prefix; limit 0 gives an empty list. Include pytest tests."
)
RIGHT = """
class Library:
    def __init__(self):
        self.copies, self.loans = {}, []

    def add_book(self, isbn, copies=1):
        if copies <= 0:
            raise ValueError("copies must be positive")
        self.copies[isbn] = self.copies.get(isbn, 0) + copies
        return self.copies[isbn]

    def copies_of(self, isbn):
        return self.copies.get(isbn, 0)

    def lend(self, isbn, member=None):
        if isbn not in self.copies:
            raise KeyError(isbn)
        self.loans.append((isbn, member))
        return len(self.loans)

    def history(self, member=None):
        return [i for i, m in self.loans if member is None or m == member]

    def undo_last(self):
        return bool(self.loans) and self.loans.pop() is not None

    def due(self, loan_id):
        if not 1 <= loan_id <= len(self.loans):
            raise LookupError(loan_id)
        return loan_id + 14

    def search(self, prefix, limit=5):
        return sorted(i for i in self.copies if i.startswith(prefix))[:limit]
"""
# Typical slips: None for what is unknown, the wrong exception, no guard on an empty state.
WRONG = (
    RIGHT.replace("self.copies.get(isbn, 0)", "self.copies.get(isbn)")
    .replace("raise KeyError(isbn)", "raise ValueError(isbn)")
    .replace(
        "return bool(self.loans) and self.loans.pop() is not None",
        "return self.loans.pop() is not None",
    )  # fmt: skip
)


def outcomes(task: str) -> list[str]:
    return [
        c.describe()
        for clause in task_clauses(task)
        for c in clause.checks
        if c.origin == "task" and c.criterion == OUTCOME_CRITERION
    ]


def test_what_a_new_object_gives_or_raises_is_a_call_on_one_built_from_its_construction() -> None:
    assert outcomes(LIBRARY) == [
        "obj = Library() ; obj.copies_of(isbn='zzz') == 0",
        "obj = Library() ; obj.lend(isbn='zzz') raises KeyError",
        "obj = Library() ; obj.history(member='zzz') == []",
        "obj = Library() ; obj.undo_last() == False",
        "obj = Library() ; obj.due(loan_id=987654) raises LookupError",
        "obj = Library() ; obj.search(prefix='a', limit=0) == []",
    ]


def test_a_requirement_with_otherwise_is_a_condition_check() -> None:
    errors = [
        c.describe()
        for clause in task_clauses(LIBRARY)
        for c in clause.checks
        if c.origin == "task" and c.raises == "ValueError"
    ]
    assert errors == ["obj = Library() ; obj.add_book(isbn='a', copies=0) raises ValueError"]


def test_the_checks_pass_on_code_that_meets_the_clauses_and_fail_on_the_usual_slips(
    tmp_path: Path,
) -> None:
    checks = [c for clause in task_clauses(LIBRARY) for c in clause.checks
              if c.criterion == OUTCOME_CRITERION]  # fmt: skip
    statuses = {}
    for name, source in (("right", RIGHT), ("wrong", WRONG)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "impl.py").write_text(source)
        report = run_contract(
            checks, staging=tmp_path / name, runner=default_runner(), limits=Limits(timeout_s=30.0)
        )
        statuses[name] = [r.status for r in report.results]
    assert statuses["right"] == ["passed"] * 6
    # None for 0, ValueError for KeyError, IndexError from an empty pop for False: caught.
    assert statuses["wrong"] == ["failed", "error", "passed", "error", "passed", "passed"]


def test_nothing_is_read_from_a_clause_without_a_subject_a_literal_or_a_safe_call() -> None:
    vague = (
        "Write a Registry class; Registry() takes no arguments. put(key: str, kind: str) -> None "
        "stores a key of a kind; an unknown key raises KeyError. Unknown keys are rare, and "
        "an unknown kind gives something sensible. lookup(key: str) -> str returns the kind."
    )
    # put's other argument has no default (a placeholder could be invalid); the second
    # sentence names no callable; "something sensible" is no literal.
    assert outcomes(vague) == []


COUNTER = (
    "Write a Counter class; Counter(start: int = 0) begins at start. The current count is "
    "exposed as a read-only property named value. tick() -> int adds one and returns the count."
)
DEDUPE = (
    "Write dedupe(items: list[int]) -> list[int] that returns the items without repeats, first "
    "occurrences in order, and leaves the input list unchanged. For example, dedupe([3, 1, 3, "
    "2]) returns [3, 1, 2]."
)
GUARDED = """
class Counter:
    def __init__(self, start=0):
        self._value = start

    @property
    def value(self):
        return self._value

    def tick(self):
        self._value += 1
        return self._value


def dedupe(items):
    seen = set()
    return [i for i in items if not (i in seen or seen.add(i))]
"""
# A plain attribute anyone can overwrite; a dedupe that empties its argument as it goes.
OPEN = GUARDED.replace("self._value", "self.value").replace(
    "    @property\n    def value(self):\n        return self.value\n\n", ""
) + (
    "\n\ndef dedupe(items):\n    out = []\n    while items:\n        i = items.pop(0)\n"
    "        if i not in out:\n            out.append(i)\n    return out\n"
)


def test_a_read_only_property_and_an_unchanged_input_are_executed(tmp_path: Path) -> None:
    found = [
        c
        for task in (COUNTER, DEDUPE)
        for clause in task_clauses(task)
        for c in clause.checks
        if c.criterion == OUTCOME_CRITERION
    ]
    assert [c.describe() for c in found] == [
        "obj = Counter(start=0) ; setattr(obj, 'value', obj.value) raises AttributeError",
        "given = [3, 1, 3, 2] ; dedupe(given) ; given == [3, 1, 3, 2]",
    ]
    statuses = {}
    for name, source in (("guarded", GUARDED), ("open", OPEN)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "impl.py").write_text(source)
        report = run_contract(
            found, staging=tmp_path / name, runner=default_runner(), limits=Limits(timeout_s=30.0)
        )
        statuses[name] = [r.status for r in report.results]
    assert statuses == {"guarded": ["passed", "passed"], "open": ["failed", "failed"]}
