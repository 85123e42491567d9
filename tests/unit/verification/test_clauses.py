"""Clauses found by code, each with the checks that execute it, run for real in the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.contract import check_problems, run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check, Clause
from atom_agent.verification.clauses import (
    PROPERTY_CRITERION,
    SIGNATURE_CRITERION,
    attribute,
    coverage,
    placed,
    restates_task,
    split_clauses,
    task_clauses,
)

RLE = (
    "Write rle_encode(s: str) -> str and rle_decode(s: str) -> str for run-length encoding where "
    "each run is written as count followed by the character, e.g. 'aaabcc' -> '3a1b2c'. Counts "
    "can exceed 9. decode(encode(s)) == s for any string of letters; rle_decode raises "
    "ValueError on malformed input such as 'a3' or '3'. Include pytest tests."
)
ALLOCATE = (
    "Write allocate(total: int, weights: list[int], unit: int = 1) -> list[int]. It returns a "
    "new list of ints. A negative total raises ValueError."
)
BANK = (
    "Step 1: an Account class with an owner name, a balance starting at 0, deposit(amount) and "
    "withdraw(amount); amounts must be positive (ValueError otherwise). Step 2: a "
    "transfer(src, dst, amount) function that moves money between two accounts."
)

GOOD_RLE = """
import re
def rle_encode(s):
    out, i = [], 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append(f"{j - i}{s[i]}")
        i = j
    return "".join(out)
def rle_decode(s):
    if not re.fullmatch(r"(\\d+[^\\d])*", s):
        raise ValueError(s)
    return "".join(c * int(n) for n, c in re.findall(r"(\\d+)(\\D)", s))
"""
# Loses the case of upper-case letters: the property over strings of letters catches it.
BAD_RLE = GOOD_RLE.replace('out.append(f"{j - i}{s[i]}")', 'out.append(f"{j - i}{s[i].lower()}")')
assert BAD_RLE != GOOD_RLE
PAST_NINE = GOOD_RLE.replace('out.append(f"{j - i}{s[i]}")', 'out.append(f"{(j - i) % 10}{s[i]}")')
assert PAST_NINE != GOOD_RLE


def _run(tmp_path: Path, source: str, checks: list[Check]) -> list[str]:
    (tmp_path / "impl.py").write_text(source)
    report = run_contract(
        checks, staging=tmp_path, runner=default_runner(), limits=Limits(timeout_s=30)
    )
    return [r.status for r in report.results]


def test_a_task_splits_into_clauses_and_the_meta_request_is_not_one() -> None:
    texts = [c.text for c in task_clauses(RLE)]
    assert texts[0].startswith("Write rle_encode(s: str)")
    assert texts[0].endswith("'aaabcc' -> '3a1b2c'.")  # "e.g." does not end a sentence
    assert "Counts can exceed 9." in texts
    assert not any("Include pytest tests" in t for t in texts)
    assert [t for t, _ in split_clauses("add(1); sub(2)")] == ["add(1);", "sub(2)"]


def test_a_code_block_and_its_fences_are_no_clause() -> None:
    task = (
        "Complete `mean` below.\n\n```python\ndef mean(xs: list[float]) -> float:\n"
        '    """The mean of xs. mean([]) raises ValueError."""\n```\n'
    )
    parts = split_clauses(task)
    assert [t for t, _ in parts] == ["Complete `mean` below."]
    assert all(task[at : at + len(t)] == t for t, at in parts)


def test_stated_signatures_become_inspect_checks_with_defaults(tmp_path: Path) -> None:
    clauses = task_clauses(ALLOCATE)
    sig = [c for cl in clauses for c in cl.checks if c.criterion == SIGNATURE_CRITERION]
    assert len(sig) == 1 and clauses[0].kind == "signature"
    assert sig[0].expect == "[('total', None), ('weights', None), ('unit', '1')]"
    assert not check_problems(sig[0], defines=["allocate"])
    right = "def allocate(total, weights, unit=1):\n    return []\n"
    wrong_default = "def allocate(total, weights, unit=5):\n    return []\n"
    renamed = "def allocate(amount, weights, unit=1):\n    return []\n"
    assert _run(tmp_path, right, sig) == ["passed"]
    assert _run(tmp_path, wrong_default, sig) == ["failed"]
    assert _run(tmp_path, renamed, sig) == ["failed"]


def test_a_method_signature_is_checked_on_its_class_and_a_function_stays_a_function(
    tmp_path: Path,
) -> None:
    checks = [c for cl in task_clauses(BANK) for c in cl.checks]
    calls = {c.call.splitlines()[-1] for c in checks if c.criterion == SIGNATURE_CRITERION}
    assert any("inspect.signature(Account.deposit)" in c for c in calls)
    assert any("inspect.signature(Account.withdraw)" in c for c in calls)
    assert any("inspect.signature(transfer)" in c for c in calls)
    code = (
        "class Account:\n"
        "    def __init__(self, owner):\n        self.balance = 0\n"
        "    def deposit(self, amount):\n        self.balance += amount\n"
        "    def withdraw(self, value):\n        self.balance -= value\n"
        "def transfer(src, dst, amount):\n    pass\n"
    )
    sig = [c for c in checks if c.criterion == SIGNATURE_CRITERION]
    calls = [c.call.splitlines()[-1] for c in sig]
    statuses = dict(zip(calls, _run(tmp_path, code, sig), strict=True))
    assert [s for c, s in statuses.items() if "withdraw" in c] == ["failed"]  # value, not amount
    assert [s for c, s in statuses.items() if "deposit" in c] == ["passed"]


def test_examples_in_any_phrasing_and_the_errors_with_their_inputs(tmp_path: Path) -> None:
    checks = [c for cl in task_clauses(RLE) for c in cl.checks]
    described = {c.describe() for c in checks}
    one = task_clauses("slug(text) gives 'a-b' for 'A b', e.g. 'X y' -> 'x-y'.", names=["slug"])
    assert "slug('X y') == 'x-y'" in {c.describe() for cl in one for c in cl.checks}
    # 'aaabcc' -> '3a1b2c' names no function, and the clause names two: not guessed.
    assert not any("'aaabcc'" in d for d in described)
    assert "rle_decode('a3') raises ValueError" in described
    assert "rle_decode('3') raises ValueError" in described
    # Read from the task: the task's.
    assert all(c.clause for c in checks)
    assert all(c.origin == "task" for c in checks)


def test_a_stated_property_runs_over_generated_inputs_and_names_the_counterexample(
    tmp_path: Path,
) -> None:
    clauses = task_clauses(RLE, names=["rle_encode", "rle_decode"])
    text = "rle_decode(rle_encode(s)) == s for any string of letters"
    prop = [c for c in task_clauses(text, names=["rle_encode", "rle_decode"])[0].checks]
    assert len(prop) == 1 and "st.text(alphabet=string.ascii_letters)" in prop[0].call
    # Runs of one letter are drawn on purpose: a count past 9 is where run-length code breaks.
    (tmp_path / "runs").mkdir()
    assert _run(tmp_path / "runs", PAST_NINE, prop) == ["failed"]
    assert not check_problems(prop[0], defines=["rle_encode", "rle_decode"])
    assert _run(tmp_path, GOOD_RLE, prop) == ["passed"]
    (tmp_path / "impl.py").write_text(BAD_RLE)
    report = run_contract(prop, staging=tmp_path, runner=default_runner(), limits=Limits())
    assert report.results[0].status == "failed"
    # The shrunk input and what each call gave on it, innermost first, for the retry.
    assert report.results[0].got == (
        "\"fails for s='A': rle_encode(s) returned '1a'; rle_decode(rle_encode(s)) returned 'a'\""
    )
    (tmp_path / "impl.py").write_text(PAST_NINE)
    report = run_contract(prop, staging=tmp_path, runner=default_runner(), limits=Limits())
    assert "rle_encode(s) returned '0A'" in report.results[0].got
    # A call that raises ends the trace with its exception.
    one_digit = GOOD_RLE.split("def rle_decode")[0] + (
        "def rle_decode(s):\n"
        "    return ''.join(s[i + 1] * int(s[i]) for i in range(0, len(s), 2))\n"
    )
    (tmp_path / "impl.py").write_text(one_digit)
    report = run_contract(prop, staging=tmp_path, runner=default_runner(), limits=Limits())
    assert report.results[0].got == (
        "\"fails for s='AAAAAAAAAA': rle_encode(s) returned '10A'; rle_decode(rle_encode(s))"
        ' raised IndexError: string index out of range"'
    )
    # The task's shorthand decode(encode(s)) is read as the names the task asks for.
    (stated,) = [c for cl in clauses for c in cl.checks if c.criterion == PROPERTY_CRITERION]
    assert "rle_decode(rle_encode(s)) == s" in stated.call
    assert _run(tmp_path, GOOD_RLE, [stated]) == ["passed"]


def test_shorthands_in_a_round_trip_sentence_are_not_names_to_define() -> None:
    from atom_agent.nodes.planner import task_names

    assert task_names(RLE) == ["rle_encode", "rle_decode"]


def test_a_check_that_restates_the_task_is_the_tasks_however_it_is_phrased() -> None:
    task = "Invalid inputs, such as 'x1' or '', raise ValueError. from_roman('IV') gives 4."
    restated = Check(call="from_roman('x1')", raises="ValueError", origin="planner")
    example = Check(call="from_roman('IV')", expect="4", origin="planner")
    invented = Check(call="from_roman('MMXX')", expect="2020", origin="planner")
    assert restates_task(restated, task) and restates_task(example, task)
    assert not restates_task(invented, task)
    clauses = task_clauses(task, names=["from_roman"])
    assert placed(restated, task, clauses).origin == "task"
    assert placed(invented, task, clauses).origin == "planner"


def test_model_checks_are_attributed_to_the_clause_they_share_most_with() -> None:
    clauses = [
        Clause(id="c1", text="Deposits must be positive (ValueError otherwise)", kind="error"),
        Clause(id="c2", text="history() lists the amounts in order", kind="behaviour"),
    ]
    err = Check(call="a = Account('x')\na.deposit(-1)", raises="ValueError")
    hist = Check(call="a = Account('x')\na.deposit(5)\na.history()", expect="[5]")
    assert attribute(err, clauses) == "c1"
    assert attribute(hist, clauses) == "c2"


def test_coverage_lists_verified_failed_not_run_and_unchecked_clauses() -> None:
    clauses = [
        Clause(id="c1", text="one", kind="example", checks=[Check(call="f(1)", expect="1")]),
        Clause(id="c2", text="two", kind="example", checks=[Check(call="f(2)", expect="2")]),
        Clause(id="c3", text="three", kind="behaviour"),
        Clause(id="c4", text="four", kind="example", checks=[Check(call="f(4)", expect="4")]),
    ]
    cov = coverage(clauses, {"c1": ["passed"], "c2": ["passed", "failed"]})
    assert (cov.verified, cov.failed, cov.unchecked, cov.not_run) == (
        ["c1"],
        ["c2"],
        ["c3"],
        ["c4"],
    )
    assert cov.summary().startswith("4 clauses: 1 verified, 1 failed")
    assert '1 unchecked ("three")' in cov.summary()


def test_a_passing_signature_check_verifies_only_a_clause_that_is_just_a_signature() -> None:
    from atom_agent.verification.clauses import SIGNATURE_PASSED

    sig = Check(call="f", expect="[]", criterion="signature")
    bare = Clause(id="c1", text="Autocomplete() takes no arguments.", kind="signature",
                  checks=[sig])  # fmt: skip
    more = Clause(
        id="c2",
        text="free_slots(room: str, start: int, end: int) -> list[tuple[int, int]] returns the "
        "maximal stretches of [start, end) not covered by any booking",
        kind="signature",
        checks=[sig],
    )
    cov = coverage([bare, more], {"c1": [SIGNATURE_PASSED], "c2": [SIGNATURE_PASSED]})
    assert (cov.verified, cov.unchecked) == (["c1"], ["c2"])
    # What it computes, executed, verifies it; a failing signature fails it either way.
    assert coverage([more], {"c2": [SIGNATURE_PASSED, "passed"]}).verified == ["c2"]
    assert coverage([bare], {"c1": ["failed"]}).failed == ["c1"]


@pytest.mark.parametrize(
    "text",
    ["the result of decode(encode(s)) is s", "returns f('x') for each input", "see g(1, 2)"],
)
def test_calls_with_literals_or_nested_calls_are_not_signatures(text: str) -> None:
    checks = [c for cl in task_clauses(text, names=["decode", "encode", "f", "g"])
              for c in cl.checks]  # fmt: skip
    assert not [c for c in checks if c.criterion == SIGNATURE_CRITERION]


def test_an_invalid_item_of_a_list_parameter_is_passed_in_a_list() -> None:
    task = (
        "Write total(prices: list[str]) -> int that adds up prices written in cents. "
        "total raises ValueError for a malformed price such as '1.5.0' or 'abc'. "
        "Write parse(text: str) -> int; parse raises ValueError on bad text such as 'x'."
    )
    calls = [
        c.call
        for clause in task_clauses(task, names=["total", "parse"])
        for c in clause.checks
        if c.raises
    ]
    assert calls == ["total(['1.5.0'])", "total(['abc'])", "parse('x')"]


TABLE = (
    "Write a Table class with add_row(*values) and render() -> str. Cells are joined with ' | '. "
    "Example: with headers ['name', 'qty'] and the rows ('apple', 3) and ('kiwi', 12), "
    "render() returns 'name  | qty\\n------+----\\napple |   3\\nkiwi  |  12'."
)


def test_a_scenario_that_restates_one_worked_example_of_the_task_is_the_tasks() -> None:
    expected = "'name  | qty\\n------+----\\napple |   3\\nkiwi  |  12'"
    scenario = (
        "t = Table(['name', 'qty'])\nt.add_row('apple', 3)\nt.add_row('kiwi', 12)\nt.render()"
    )
    assert restates_task(Check(call=scenario, expect=expected, origin="planner"), TABLE)
    # A value the model worked out itself is its own, however task-like its inputs.
    other = "'name  | qty\\n------+----\\napple | 3'"
    assert not restates_task(Check(call=scenario, expect=other, origin="planner"), TABLE)
    # Literals from one clause and a result from another: no clause says that.
    mixed = "t = Table(['name', 'qty'])\nt.add_row('apple', 3)\nt.render()"
    assert not restates_task(Check(call=mixed, expect="' | '", origin="planner"), TABLE)
    # A bare True/False/None result restates nothing in particular.
    flag = "t = Table(['name', 'qty'])\nt.add_row('apple', 3)\n'apple' in t.render()"
    assert not restates_task(Check(call=flag, expect="True", origin="planner"), TABLE + " True.")


QUEUE = (
    "Write a `Queue` class. `push(item)` adds item at the back; `pop()` removes and returns "
    "the front item and raises IndexError when empty. `size()` gives the number of items. "
    "Example: with limit 3, after push('x'), push('y') and pop(), the queue holds ['y']. "
    "Write `trim(text, width=10)`; trim('abcdef') returns 'abcdef'."
)


def test_a_one_line_value_check_is_the_tasks_only_when_one_clause_states_its_call_and_result() -> (
    None
):
    # Literals and a result gathered from all over the task: each one is there, the claim is not.
    for call, expect in (
        ("Queue(3).pop()", "'x'"),  # the example's pushes dropped
        ("Queue(3).size()", "3"),  # "limit 3" read as a size
        ("trim('abcdef', 3)", "'abcdef'"),  # a width the example never gives
    ):
        invented = Check(call=call, expect=expect, origin="planner")
        assert not restates_task(invented, QUEUE), call
        assert placed(invented, QUEUE, task_clauses(QUEUE, names=["Queue", "trim"])).origin == (
            "planner"
        )
    # One clause states the call and its result: the task's word, whoever wrote it.
    assert restates_task(Check(call="trim('abcdef')", expect="'abcdef'", origin="planner"), QUEUE)
    # An error the task states keeps its reading over the whole task.
    assert restates_task(Check(call="Queue(3).pop()", raises="IndexError", origin="planner"), QUEUE)


def test_a_sentence_stating_two_functions_is_a_clause_for_each() -> None:
    task = (
        "Write merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]] that "
        "merges overlapping intervals and returns them sorted by start, and "
        "insert_interval(intervals, new) that inserts one interval into a merged list. "
        "An interval with start > end raises ValueError."
    )
    clauses = task_clauses(task, names=["merge_intervals", "insert_interval"])
    assert [c.text[:20] for c in clauses] == [
        "Write merge_interval", "insert_interval(inte", "An interval with sta",
    ]  # fmt: skip
    # Each statement has its own signature check: a check of one never covers the other.
    assert [c.kind for c in clauses[:2]] == ["signature", "signature"]
    assert "inspect.signature(insert_interval)" in clauses[1].checks[0].call
    assert not any("insert_interval" in c.call for c in clauses[0].checks)
    # One statement about both stays whole, with no comma before the "and".
    rle = task_clauses(RLE, names=["rle_encode", "rle_decode"])
    assert rle[0].text.startswith("Write rle_encode(s: str) -> str and rle_decode(s: str)")
