"""The contract: task examples extracted by code, checks validated, run in the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.contract import (
    AFTER_LOOP_SECONDS,
    check_problems,
    contract_tests,
    run_contract,
)
from atom_agent.checks.extract import task_checks
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check

RUNNER = default_runner()
LIMITS = Limits(timeout_s=30.0, cpu_s=30)


def described(text: str, names: list[str] | None = None) -> list[str]:
    return [c.describe() for c in task_checks(text, names=names)]


# --- extraction: every form tasks write examples in ---------------------------------------


def test_doctest_lines_become_checks_with_setup_and_exceptions() -> None:
    text = """
    >>> add(2, 3)
    5
    >>> xs = [1, 2]
    >>> total(xs)
    3
    >>> add('a', 1)
    Traceback (most recent call last):
    TypeError: bad
    """
    # Statements without output stay in scope for every later example, as in doctest.
    assert described(text) == ["add(2, 3) == 5", "xs = [1, 2] ; total(xs) == 3",
                               "xs = [1, 2] ; add('a', 1) raises TypeError"]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("For example: f(3) ==> 6 and f(0) ==> 0.", ["f(3) == 6", "f(0) == 0"]),
        ("roman(4) == 'iv'\nroman(19) == 'xix'", ["roman(4) == 'iv'", "roman(19) == 'xix'"]),
        ("so f([1, 2], k=1) -> [2] holds", ["f([1, 2], k=1) == [2]"]),
        ("f('ab') should return 'ba' for this input", ["f('ab') == 'ba'"]),
        ("f(-1) returns None, f(2) returns 4", ["f(-1) == None", "f(2) == 4"]),
        ("f('x') raises ValueError", ["f('x') raises ValueError"]),
        ("f(1.5) → 3.0.", ["f(1.5) == 3.0"]),
    ],
)
def test_call_arrow_forms(text: str, expected: list[str]) -> None:
    assert described(text, ["f", "roman"]) == expected


def test_input_output_blocks_use_the_one_function_the_task_names() -> None:
    text = """Write max_sub(arr, k).
    Example 1:
        Input: arr = [1, 2, 3], k = 2
        Output: 5
    Example 2:
        Input: [4], 1
        Output: 4
    """
    assert described(text) == ["max_sub([1, 2, 3], 2) == 5", "max_sub([4], 1) == 4"]


def test_literal_arrows_and_such_as_lists() -> None:
    slug = "Write slugify(text) that folds accents (e.g. 'Crème Brûlée' -> 'creme-brulee')."
    assert described(slug) == ["slugify('Crème Brûlée') == 'creme-brulee'"]
    rle = (
        "Write rle_encode(s) and rle_decode(s), e.g. 'aaabcc' -> '3a1b2c'. rle_decode raises "
        "ValueError on malformed input such as 'a3' or '3'."
    )
    # Two functions: the bare example could belong to either and is left out; the such-as
    # list names its function.
    assert described(rle) == [
        "rle_decode('a3') raises ValueError",
        "rle_decode('3') raises ValueError",
    ]


def test_signatures_and_prose_are_not_checks() -> None:
    text = (
        "Write evaluate_rpn(expr: str) -> float that evaluates RPN. merge(a, b) -> list "
        "returns the merged list if a and b are sorted."
    )
    assert described(text) == []


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "reason"),
    [
        (Check(call="f(1", expect="2"), "not Python"),
        (Check(call="x = f(1)", expect="2"), "last line must be an expression"),
        (Check(call="f(1)"), "exactly one of"),
        (Check(call="f(1)", expect="2", raises="ValueError"), "exactly one of"),
        (Check(call="g(1)", expect="2"), "uses g, which the step does not define"),
        (Check(call="f(1)", raises="not an exception!"), "must name an exception"),
    ],
)
def test_a_check_that_cannot_run_says_why(check: Check, reason: str) -> None:
    problems = check_problems(check, defines=["f"])
    assert problems and reason in " ".join(problems)


def test_a_valid_check_may_use_dependencies_and_the_standard_library() -> None:
    check = Check(call="f(math.pi) + helper(1)", expect="4")
    assert check_problems(check, defines=["f"], available=["helper"]) == []


# --- running in the sandbox -------------------------------------------------------------------

CHECKS = [
    Check(call="add(2, 3)", expect="5"),
    Check(call="add(0.1, 0.2)", expect="0.3"),  # float tolerance
    Check(call="pair()", expect="[1, 2]"),  # a tuple and a list of the same items agree
    Check(call="add(2, 2)", expect="5"),  # wrong value
    Check(call="add('a', 1)", raises="TypeError"),  # expected exception
    Check(call="add(1, 1)", raises="ValueError"),  # returned instead of raising
    Check(call="spin()", expect="1"),  # a loop
    Check(call="missing(1)", expect="1"),  # not defined by the code (a code failure)
    Check(call="add(1,", expect="2"),  # cannot run
]
IMPL = """
def add(a, b):
    return a + b

def pair():
    return (1, 2)

def spin():
    while True:
        pass
"""


def _staged(tmp_path: Path, source: str) -> Path:
    (tmp_path / "impl.py").write_text(source)
    return tmp_path


def test_every_outcome_of_a_contract_run(tmp_path: Path) -> None:
    report = run_contract(
        CHECKS, staging=_staged(tmp_path, IMPL), runner=RUNNER, limits=LIMITS, per_check_s=1.0
    )
    statuses = [r.status for r in report.results]
    assert statuses == ["passed", "passed", "passed", "failed", "passed", "failed", "timeout",
                        "error", "invalid"]  # fmt: skip
    assert "expected 5, got 4" in report.results[3].reason
    assert "instead of raising ValueError" in report.results[5].reason
    assert "NameError" in report.results[7].reason
    assert "not Python" in report.results[8].reason
    assert not report.all_passed()
    assert report.all_passed(ignore={3, 5, 6, 7})  # the invalid one never counts either way
    assert report.summary() == "4 passed, 4 failed, 1 cannot run"


def test_once_code_loops_its_later_checks_get_the_shorter_limit(tmp_path: Path) -> None:
    source = "import time\n\ndef slow(s):\n    time.sleep(s)\n    return s\n"
    checks = [Check(call="slow(1.5)", expect="1.5"), Check(call="slow(9)", expect="9"),
              Check(call="slow(1.5)", expect="1.5")]  # fmt: skip
    report = run_contract(checks, staging=_staged(tmp_path, source), runner=RUNNER, limits=LIMITS,
                          per_check_s=3.0)  # fmt: skip
    # The same 1.5 s call fits the full limit before the loop, not the shorter one after it.
    assert [r.status for r in report.results] == ["passed", "timeout", "timeout"]
    assert "did not finish in 3 s" in report.results[1].reason
    assert f"did not finish in {AFTER_LOOP_SECONDS:g} s" in report.results[2].reason


def test_code_that_raises_on_import_fails_every_check_with_the_reason(tmp_path: Path) -> None:
    staging = _staged(tmp_path, "import nothing_like_this\n")
    report = run_contract(CHECKS[:2], staging=staging, runner=RUNNER, limits=LIMITS)
    assert [r.status for r in report.results] == ["error", "error"]
    assert "raises on import" in report.error and "nothing_like_this" in report.error
    assert not report.all_passed()


def test_a_process_that_exits_mid_run_keeps_what_ran(tmp_path: Path) -> None:
    source = "import os\n\ndef add(a, b):\n    return a + b\n\ndef leave():\n    os._exit(0)\n"
    checks = [CHECKS[0], Check(call="leave()", expect="1"), CHECKS[0]]
    report = run_contract(checks, staging=_staged(tmp_path, source), runner=RUNNER, limits=LIMITS)
    assert [r.status for r in report.results] == ["passed", "error", "not_run"]
    assert "ended" in report.results[1].reason and not report.all_passed()


def test_a_contract_without_code_is_not_passed(tmp_path: Path) -> None:
    report = run_contract(CHECKS[:1], staging=tmp_path, runner=RUNNER, limits=LIMITS)
    assert report.error == "impl.py is missing" and not report.all_passed()


def test_generated_tests_pass_on_right_code_and_fail_on_wrong(tmp_path: Path) -> None:
    checks = [c for i, c in enumerate(CHECKS) if i in (0, 1, 2, 4)]
    tests = contract_tests(checks)
    right = tmp_path / "right"
    right.mkdir()
    _staged(right, IMPL)
    (right / "test.py").write_text(tests)
    result = RUNNER.run_pytest(cwd=right, limits=LIMITS, targets=["test.py"])
    assert result.tests is not None and result.tests.passed == 4 and result.ok
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    _staged(wrong, IMPL.replace("return a + b", "return a - b"))
    (wrong / "test.py").write_text(tests)
    result = RUNNER.run_pytest(cwd=wrong, limits=LIMITS, targets=["test.py"])
    assert result.tests is not None and result.tests.failed == 2 and not result.ok


def test_generated_tests_keep_the_nesting_of_a_checks_setup(tmp_path: Path) -> None:
    nested = Check(
        call="def twice(n):\n    total = 0\n    for _ in range(2):\n        total = add(total, n)\n"
        "    return total\ntwice(3)",
        expect="6",
    )
    folder = tmp_path / "nested"
    folder.mkdir()
    _staged(folder, IMPL)
    (folder / "test.py").write_text(contract_tests([nested]))
    result = RUNNER.run_pytest(cwd=folder, limits=LIMITS, targets=["test.py"])
    assert result.tests is not None and result.tests.passed == 1 and result.ok, result.output


# --- contracts written by a model as pytest code ----------------------------------------------


def test_asserts_parametrized_cases_raises_and_setup_become_checks() -> None:
    from atom_agent.checks.asserts import checks_from_tests

    source = """
import pytest

def is_palindrome(s):  # a model often writes the code too: it is ignored
    return True

@pytest.mark.parametrize("s, expected", [("Aba", True), ("ab", False)])
def test_cases(s, expected):
    assert is_palindrome(s) == expected, f"failed for {s}"

@pytest.mark.parametrize("bad", ["a3", "3"])
def test_bad(bad):
    with pytest.raises(ValueError):
        decode(bad)

def test_account():
    a = Account("x")
    a.deposit(5)
    assert a.balance == 5
    assert not is_palindrome("xy")
    assert is_palindrome("")
    assert len(str(a)) > 0  # not a checkable equality: left out

def test_area():
    assert abs(area(2.0) - 12.566) < 1e-3  # a float within the test's own tolerance
    assert abs(area(1.0)) < 4  # no difference: left out
"""
    checks = checks_from_tests(source, criterion="c")
    assert [c.describe() for c in checks] == [
        "is_palindrome('Aba') == True",
        "is_palindrome('ab') == False",
        "decode('a3') raises ValueError",
        "decode('3') raises ValueError",
        "a = Account('x') ; a.deposit(5) ; a.balance == 5",
        "a = Account('x') ; a.deposit(5) ; bool(is_palindrome('xy')) == False",
        "a = Account('x') ; a.deposit(5) ; bool(is_palindrome('')) == True",
        "abs(area(2.0) - 12.566) < 0.001 == True",
    ]
    assert {c.criterion for c in checks} == {"c"}
    assert checks_from_tests("this is not python") == []


def test_asserted_truth_is_the_values_truth_not_equality_with_a_bool(tmp_path: Path) -> None:
    source = (
        "def test_it():\n    assert not pending()\n    assert done()\n    assert not bool(x())\n"
    )
    from atom_agent.checks.asserts import checks_from_tests

    checks = checks_from_tests(source)
    assert [c.describe() for c in checks] == [
        "bool(pending()) == False",
        "bool(done()) == True",
        "bool(x()) == False",
    ]
    code = (
        "def pending():\n    return []\n\ndef done():\n    return [1]\n\ndef x():\n    return ''\n"
    )
    report = run_contract(checks, staging=_staged(tmp_path, code), runner=RUNNER, limits=LIMITS)
    assert report.all_passed(), report.summary()


def test_an_assert_against_pytest_raises_states_nothing() -> None:
    from atom_agent.checks.asserts import checks_from_tests

    tests = (
        "import pytest\n\n"
        "def test_evaluate():\n"
        "    assert evaluate('3 4 +') == 7\n"
        "    assert evaluate('1 0 /') == pytest.raises(ZeroDivisionError)\n\n"
        "@pytest.mark.parametrize('expr, want', [('1 1 +', 2), ('2 2 *', 4)])\n"
        "def test_more(expr, want):\n"
        "    assert evaluate(expr) == want\n"
    )
    found = [c.describe() for c in checks_from_tests(tests)]
    # `== pytest.raises(E)` compares a value with a context manager: it states nothing.
    assert found == [
        "evaluate('3 4 +') == 7",
        "evaluate('1 1 +') == 2",
        "evaluate('2 2 *') == 4",
    ]
