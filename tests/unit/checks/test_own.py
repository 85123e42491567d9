"""The drafts' own tests read back as checks, and the task's examples outranking them."""

from __future__ import annotations

from pathlib import Path

from atom_agent.checks.own import load_own, merged, outranking, own_checks, save_own
from atom_agent.replies import extract_code, written_tests
from atom_agent.state import Check

DRAFT = """Here:
```python
def add(a, b):
    assert isinstance(a, int)
    return a - b


def test_add():
    assert add(2, 3) == 5
    assert helper(1) == 1


assert add(0, 0) == 0
```
"""


def test_the_tests_after_a_drafts_code_become_own_checks_of_what_the_step_defines() -> None:
    code = extract_code(DRAFT, tests=True)
    checks = own_checks(code, ["add"])
    # The assert inside the implementation is no test; a test of a name the step does not
    # define checks nothing of it.
    assert sorted(c.describe() for c in checks) == ["add(0, 0) == 0", "add(2, 3) == 5"]
    assert {c.origin for c in checks} == {"own"}
    assert "def add" not in written_tests(code) and "def test_add" in written_tests(code)


def test_a_draft_without_tests_has_no_own_checks() -> None:
    assert own_checks("def add(a, b):\n    return a + b\n", ["add"]) == []
    assert written_tests("import math\n\n\ndef f():\n    return math.pi\n") == ""


def test_the_tasks_check_of_the_same_call_outranks_an_own_test_that_disagrees() -> None:
    task = Check(call="add(2, 3)", expect="5", origin="task")
    planner = Check(call="add(1, 1)", expect="3", origin="planner")
    wrong = Check(call="add(2,  3)", expect="6", origin="own")
    same = Check(call="add(2, 3)", expect="5.0", origin="own")
    other = Check(call="add(1, 1)", expect="2", origin="own")
    assert outranking(wrong, [task, planner]) == task
    assert outranking(same, [task]) is None  # the same value, written otherwise
    assert outranking(other, [task, planner]) is None  # only the task's word outranks


def test_own_checks_are_merged_once_and_survive_a_round_trip(tmp_path: Path) -> None:
    task = Check(call="add(2, 3)", expect="5", origin="task")
    a = Check(call="add(2, 3)", expect="5", origin="own")
    b = Check(call="add(4, 4)", expect="8", origin="own")
    kept = merged([task], [a, b], [b])
    assert kept == [b]
    save_own(tmp_path, kept)
    assert load_own(tmp_path) == [b]
    assert load_own(tmp_path / "nowhere") == []
