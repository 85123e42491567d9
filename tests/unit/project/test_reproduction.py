"""Reading a model's reproduction tests of a project's target into checks, and which to keep."""

from __future__ import annotations

from pathlib import Path

from atom_agent.checks.contract import CheckResult, ContractReport
from atom_agent.project.reproduction import (
    CRITERION,
    chosen,
    reproduction_checks,
    stopped_before,
    usages_in_tests,
)
from atom_agent.state import Check


def test_the_tests_imports_come_first_in_every_check_and_pytest_is_left_out() -> None:
    source = (
        "import pytest\n"
        "from datetime import date\n"
        "from box import Box\n\n"
        "def test_grow():\n"
        "    b = Box(date(2020, 1, 1))\n"
        "    assert b.grow(2) == 3\n\n"
        "def test_bad():\n"
        "    with pytest.raises(ValueError):\n"
        "        Box(None).grow(-1)\n"
        "    assert Box(None).grow(0) == KeyError\n"  # a small model's way to say "raises"
    )
    [grow], [bad, zero] = reproduction_checks(source)
    assert grow.call.splitlines() == [
        "from datetime import date",
        "from box import Box",
        "b = Box(date(2020, 1, 1))",
        "b.grow(2)",
    ]
    assert grow.expect == "3" and grow.criterion == CRITERION
    assert bad.call.splitlines()[:2] == ["from datetime import date", "from box import Box"]
    assert (bad.raises, zero.raises) == ("ValueError", "KeyError")
    assert not any("pytest" in c.call for c in (grow, bad, zero))


def test_tests_that_do_not_parse_give_no_check() -> None:
    assert reproduction_checks("def test_x(:\n    assert f(1) == 2\n") == []
    [[loose]] = reproduction_checks("assert f(1) == 2\n")
    assert loose.call == "f(1)"


def test_kept_checks_come_from_every_test_in_turn_and_only_those_that_reach_the_target() -> None:
    source = (
        "def test_slices():\n"
        "    p = P([1, 2, 3])\n"
        "    assert p[0:2] == [1, 2]\n"
        "    assert p[::2] == [1, 3]\n"
        "    assert p[0] == 1\n\n"  # passes on the project as it is: does not reach the target
        "def test_empty():\n" + "".join(f"    assert not P([])[1:2:{n}]\n" for n in range(3, 30))
    )
    groups = reproduction_checks(source)
    reaching = {c.describe() for g in groups for c in g if "p[0]" not in c.call}
    kept = [c.call.splitlines()[-1] for c in chosen(groups, reaching, limit=4)]
    assert kept == ["p[0:2]", "bool(P([])[1:2:3])", "p[::2]", "bool(P([])[1:2:4])"]


def test_what_stopped_a_test_before_the_target_is_told_once_per_reason() -> None:
    def result(call: str, function: str, reason: str) -> CheckResult:
        return CheckResult(Check(call=call, expect="1"), "error", reason=reason, function=function)

    missing = "TypeError: convert() missing 2 required positional arguments: 'param' and 'ctx'"
    baseline = ContractReport(
        [
            result("Choice(['a']).convert('a')", "", missing),
            result("Choice(['a']).convert('b')", "", missing),
            result("Choice(['a']).convert('a', None, None)", "Choice.convert", "NotImplemented"),
            result("Statement('x').get_type()", "TokenList.__init__", "TypeError: not iterable"),
        ]
    )
    stopped = stopped_before(baseline, "Choice.convert")
    # The run that reached the target is not a reason; the same reason twice is told once.
    assert len(stopped) == 2
    assert missing in stopped[0] and "TokenList.__init__" in stopped[1]


def test_how_the_projects_tests_call_the_target_is_found_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_types.py").write_text(
        "def test_convert():\n"
        "    # type.convert(value) is how users call it\n"
        "    assert type.convert(value, None, None) == expect\n"
        "    assert type.convert(value, None, None) == expect\n"  # the same line: once
        "    assert reconvert(1) == 2\n"  # another name that ends the same way
        "def convert(x):\n"
        "    return x\n"
    )
    found = usages_in_tests(tmp_path, ["tests/test_types.py", "tests/missing.py"], "convert")
    assert found == ["tests/test_types.py:3: assert type.convert(value, None, None) == expect"]
