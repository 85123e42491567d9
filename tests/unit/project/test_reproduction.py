"""Reading a model's reproduction tests of a project's target into checks."""

from __future__ import annotations

from atom_agent.project.reproduction import CRITERION, reproduction_checks


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
    )
    grow, bad = reproduction_checks(source)
    assert grow.call.splitlines() == [
        "from datetime import date",
        "from box import Box",
        "b = Box(date(2020, 1, 1))",
        "b.grow(2)",
    ]
    assert grow.expect == "3" and grow.criterion == CRITERION
    assert bad.call.splitlines()[:2] == ["from datetime import date", "from box import Box"]
    assert bad.raises == "ValueError"
    assert not any("pytest" in c.call for c in (grow, bad))


def test_tests_that_do_not_parse_give_no_check() -> None:
    assert reproduction_checks("def test_x(:\n    assert f(1) == 2\n") == []
    assert reproduction_checks("assert f(1) == 2\n")[0].call == "f(1)"
