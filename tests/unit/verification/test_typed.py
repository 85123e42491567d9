"""Checks drawn from the types a task states, run for real in the sandbox (Hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.contract import TYPES_CRITERION, check_problems, run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check
from atom_agent.verification.clauses import task_clauses
from atom_agent.verification.typed import annotation_prefix, shape_of, strategy

MERGE = (
    "Write merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]] that "
    "merges overlapping or touching closed intervals and returns them sorted by start. An "
    "interval with start > end raises ValueError. Include pytest tests."
)
GOOD_MERGE = """\
def merge_intervals(intervals):
    out = []
    for start, end in sorted(intervals):
        if start > end:
            raise ValueError(start, end)
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
"""
MUTATES_TUPLES = """\
def merge_intervals(intervals):
    intervals = sorted(intervals)
    merged = intervals[:1]
    for interval in intervals[1:]:
        if interval[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], interval[1])
        else:
            merged.append(interval)
    return merged
"""
BUFFER = (
    "Write a TextBuffer class. TextBuffer(text: str = '') starts from the given text. "
    "insert(pos: int, s: str) -> None inserts s at index pos; any pos outside 0 to the length "
    "raises IndexError. delete(start: int, end: int | None = None) -> str removes and returns "
    "the characters from start up to end (by default the end of the text); an invalid range "
    "raises IndexError. undo() -> bool reverses the newest edit. Include pytest tests."
)
GOOD_BUFFER = """\
class TextBuffer:
    def __init__(self, text=''):
        self.text, self._undo = text, []

    def insert(self, pos, s):
        if not 0 <= pos <= len(self.text):
            raise IndexError(pos)
        self._undo.append(self.text)
        self.text = self.text[:pos] + s + self.text[pos:]

    def delete(self, start, end=None):
        end = len(self.text) if end is None else end
        if not 0 <= start <= end <= len(self.text):
            raise IndexError(start)
        gone = self.text[start:end]
        self._undo.append(self.text)
        self.text = self.text[:start] + self.text[end:]
        return gone

    def undo(self):
        if not self._undo:
            return False
        self.text = self._undo.pop()
        return True
"""


def _typed(task: str) -> list[Check]:
    return [c for cl in task_clauses(task) for c in cl.checks if c.criterion == TYPES_CRITERION]


def _statuses(tmp_path: Path, source: str, checks: list[Check]) -> list[tuple[str, str]]:
    (tmp_path / "impl.py").write_text(source)
    report = run_contract(checks, staging=tmp_path, runner=default_runner(), limits=Limits())
    return [(r.status, r.got or r.reason) for r in report.results]


@pytest.mark.parametrize(
    ("text", "annotation"),
    [
        ("list[tuple[int, int]] that merges overlapping", "list[tuple[int, int]]"),
        ("str. Accented letters", "str"),
        ("int | None = None) and more", "int | None"),
        ("dict[str, list[int]], sorted", "dict[str, list[int]]"),
        ("tuple[str, int, int, str] for a current booking", "tuple[str, int, int, str]"),
    ],
)
def test_the_annotation_is_read_up_to_the_prose_after_it(text: str, annotation: str) -> None:
    assert annotation_prefix(text) == annotation


def test_shapes_and_strategies_of_the_types_code_can_draw() -> None:
    assert shape_of("list[tuple[int, int]]") == ("list", ("tuple", (("int",), ("int",))))
    assert shape_of("Optional[str]") == ("union", (("str",), ("none",)))
    assert shape_of("tuple[int, ...]") == ("tuple...", ("int",))
    assert shape_of("Dict[str, float]") == ("dict", ("str",), ("float",))
    assert shape_of("Matrix") is None and shape_of("list[Matrix]") is None  # nothing to draw
    assert shape_of("list") == ("list", ("any",))
    assert strategy(("list", ("any",))) is None  # elements of no stated type: not drawn
    assert (
        strategy(("tuple...", ("int",))) == "st.lists(st.integers(-20, 60), max_size=6).map(tuple)"
    )


def test_code_that_mishandles_the_stated_types_fails_with_the_smallest_input(
    tmp_path: Path,
) -> None:
    (check,) = _typed(MERGE)
    assert check.origin == "inferred" and check.clause == "c1" and check.expect == "'holds'"
    assert not check_problems(check, defines=["merge_intervals"])
    # Read as what it draws and what must hold, not as its generated code (reports, retries).
    assert check.describe() == (
        "merge_intervals(intervals: list[tuple[int, int]]) on generated inputs: no TypeError "
        "or AttributeError, and a result of type list[tuple[int, int]]"
    )
    # Right code holds: generated inputs with start > end raise the ValueError the task states.
    assert _statuses(tmp_path, GOOD_MERGE, [check]) == [("passed", "'holds'")]
    ((status, got),) = _statuses(tmp_path, MUTATES_TUPLES, [check])
    assert status == "failed"
    assert "merge_intervals([(0, 0), (0, 0)]) raised TypeError" in got, got
    assert "does not support item assignment" in got


@pytest.mark.parametrize(
    ("source", "holds"),
    [
        # A result of another type than the stated one.
        ("def merge_intervals(intervals):\n    return str(intervals)\n", False),
        # None is not blamed: code may fall through on an input it does not expect.
        ("def merge_intervals(intervals):\n    return None\n", True),
        # Any exception but TypeError/AttributeError may be a precondition's refusal.
        ("def merge_intervals(intervals):\n    raise KeyError(intervals)\n", True),
        # A call that does not end is skipped, and the check still ends.
        (
            "def merge_intervals(intervals):\n    while intervals:\n        pass\n    return []\n",
            True,
        ),
        ("def merge_intervals(intervals):\n    return intervals.copy(0)\n", False),
    ],
)
def test_what_a_generated_call_is_blamed_for(tmp_path: Path, source: str, holds: bool) -> None:
    ((status, got),) = _statuses(tmp_path, source, _typed(MERGE))
    assert (status == "passed") is holds, got


def test_a_class_gets_scenarios_of_calls_on_one_object(tmp_path: Path) -> None:
    (check,) = _typed(BUFFER)
    assert "TextBuffer" in check.call and "'delete'" in check.call and "'undo'" in check.call
    assert _statuses(tmp_path, GOOD_BUFFER, [check]) == [("passed", "'holds'")]
    # delete(start, None) compares None with an int: found in a scenario.
    broken = GOOD_BUFFER.replace("        end = len(self.text) if end is None else end\n", "")
    ((status, got),) = _statuses(tmp_path, broken, [check])
    assert status == "failed" and "obj.delete(0, None)" in got and "raised TypeError" in got, got
    # A stated method the class lacks is an AttributeError on the object.
    lacking = GOOD_BUFFER.split("    def undo(self):")[0]
    ((status, got),) = _statuses(tmp_path, lacking, [check])
    assert status == "failed" and "has no attribute 'undo'" in got, got


def test_no_check_where_the_task_names_the_watched_errors_or_states_no_types() -> None:
    assert _typed(MERGE.replace("ValueError", "TypeError or AttributeError")) == []
    assert _typed("Write merge_intervals(intervals) that merges intervals.") == []
    # A parameter whose type cannot be drawn and has no default: no check for that callable.
    assert _typed("Write scale(m: Matrix, k: int) -> Matrix that scales m.") == []
