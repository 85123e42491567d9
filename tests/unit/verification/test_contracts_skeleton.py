"""A step's contract, a test per clause: which steps get one, which checks are kept."""

from __future__ import annotations

from atom_agent.state import Check, Plan, PlanStep
from atom_agent.verification.clauses import task_clauses
from atom_agent.verification.contracts import (
    MAX_CHECKS,
    clause_tests,
    contract_prompt,
    per_clause,
    skeleton_clauses,
)


def _check(n: int, clause: str) -> Check:
    return Check(call=f"f({n})", expect=str(n), clause=clause)


def test_two_checks_per_clause_before_any_third_and_loose_ones_fill_the_rest() -> None:
    checks = [_check(i, "c1") for i in range(5)] + [_check(10 + i, "c2") for i in range(3)]
    checks += [_check(20 + i, "") for i in range(10)]
    kept = per_clause(checks)
    assert [c.call for c in kept[:4]] == ["f(0)", "f(10)", "f(1)", "f(11)"]
    # A model that named no test after a clause still gets its asserts read, up to the cap.
    assert len(kept) == MAX_CHECKS and kept[4].call == "f(20)"
    assert per_clause([_check(i, "") for i in range(3)]) == [_check(i, "") for i in range(3)]


def test_checks_are_tied_to_the_clause_their_test_is_named_after() -> None:
    source = (
        "from impl import Box\n\n"
        "def test_c2():\n"
        "    b = Box()\n"
        "    assert b.size() == 0\n\n"
        "def test_other():\n"
        "    assert Box().size() == 0\n\n"
        "def test_c9():\n"  # not a clause of the task: no tie
        "    assert Box().full() is False\n"
    )
    found = clause_tests(source, ["c1", "c2"])
    assert found == {"b = Box() ; b.size() == 0": "c2"}
    assert clause_tests("def test_c1(:\n", ["c1"]) == {}


def test_a_tests_docstring_is_no_setup_of_its_checks() -> None:
    from atom_agent.checks.asserts import checks_from_tests

    source = (
        "def test_c2():\n"
        '    """Adding matrices of incompatible shapes raises ValueError."""\n'
        "    m = Matrix([[1]])\n"
        "    assert m.shape == (1, 1)\n"
    )
    (check,) = checks_from_tests(source)
    assert check.call.splitlines() == ["m = Matrix([[1]])", "m.shape"]


def _one_step(task: str, names: list[str]) -> tuple[Plan, PlanStep]:
    clauses = task_clauses(task, names=names)
    checks = [c for clause in clauses for c in clause.checks]
    step = PlanStep(id="s1", title="t", description="d", acceptance_criteria=["x"],
                    defines=names, checks=checks)  # fmt: skip
    return Plan(steps=[step], rationale="", clauses=clauses), step


def test_functions_stated_in_prose_get_a_test_per_statement_and_code_tasks_asserts() -> None:
    task = (
        "Write merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]] that "
        "merges overlapping intervals. An interval with start > end raises ValueError. "
        "Include pytest tests."
    )
    plan, step = _one_step(task, ["merge_intervals"])
    assert [c.id for c in skeleton_clauses(plan, step)] == ["c1", "c2"]
    prompt = contract_prompt(task, plan, step)
    assert "- c2: An interval with start > end raises ValueError." in prompt
    assert "4 to 4 tests" in prompt
    # The same function given as code (HumanEval's shape): its statements are in the code.
    code = (
        "Complete the Python function `merge_intervals` below, with pytest tests.\n\n"
        "```python\ndef merge_intervals(intervals: list) -> list:\n"
        '    """Merge overlapping intervals."""\n```\n'
    )
    plan, step = _one_step(code, ["merge_intervals"])
    assert skeleton_clauses(plan, step) == []
    prompt = contract_prompt(code, plan, step)
    assert "4 to 6 tests" in prompt and "- c1: Complete the Python function" in prompt
