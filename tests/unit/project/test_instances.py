"""Where the project's tests get an object of a class: a traced run of its suite, real sandbox."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atom_agent.project.instances import MAX_ORIGINS, instance_origins
from atom_agent.project.reproduction import reproduction_prompt
from atom_agent.project.suite import suite_limits
from atom_agent.project.suite_command import TestCommand
from atom_agent.sandbox import Limits, SandboxRunner

from .test_suite import make

LIMITS = suite_limits(Limits(timeout_s=120.0, cpu_s=120, memory_mb=1024))

SQL = """\
class Token:
    def __init__(self, text):
        self.text = text


class Statement(Token):
    def __init__(self, tokens):
        super().__init__(" ".join(tokens))
        self.tokens = tokens

    def __iter__(self):
        return self

    def first(self):
        raise NotImplementedError


def parse(text):
    return [Statement(part.split()) for part in text.split(";")]


def _helper():
    return Statement(["hidden"])


class Unused:
    pass
"""


def command(*targets: str) -> TestCommand:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets]
    return TestCommand(argv=argv, python_path=["."], source="given", targets=list(targets))


def test_the_lines_that_get_an_object_are_found_not_those_that_only_use_one(
    tmp_path: Path, runner: SandboxRunner
) -> None:
    root = make(
        tmp_path / "proj",
        {
            "sql.py": SQL,
            "tests/conftest.py": """\
                import pytest
                from sql import Statement

                @pytest.fixture
                def stmt():
                    return Statement(["from", "fixture"])
            """,
            "tests/test_a.py": """\
                from sql import parse, _helper

                def test_parse():
                    first = parse("select a; select b")[0]
                    assert iter(first) is first
                    assert first.text == "select a"

                def test_inside():
                    assert _helper().text == "hidden"
            """,
            "tests/test_b.py": """\
                from sql import Token

                def test_fixture(stmt):
                    assert stmt.text == "from fixture"

                def test_token():
                    assert Token("x").text == "x"
            """,
        },
    )
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    found = instance_origins(root, command("tests"), "sql", "Statement", runner=runner,
                             limits=LIMITS)  # fmt: skip
    # A function the test calls returns a list of them; a helper returns one; a fixture
    # builds one. `iter(first)` hands back the object the test had: not a way to get one,
    # and a Token is not a Statement.
    assert found == [
        'tests/test_a.py:4: first = parse("select a; select b")[0]',
        'tests/test_a.py:9: assert _helper().text == "hidden"',
        'tests/conftest.py:6: return Statement(["from", "fixture"])',
    ]
    # The plugin lived in the run's scratch folder: the project's tree is as it was.
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_the_run_stops_once_enough_lines_are_seen(tmp_path: Path, runner: SandboxRunner) -> None:
    makes = "".join(
        f"def test_{n}():\n    assert Statement(['{n}']).tokens == ['{n}']\n\n"
        for n in range(MAX_ORIGINS)
    )
    root = make(
        tmp_path / "proj",
        {
            "sql.py": SQL,
            "tests/test_a.py": "from sql import Statement\n\n" + makes,
            "tests/test_b.py": "from sql import Statement\n\n" + makes,
            "tests/test_z.py": "from pathlib import Path\n\n"
            "def test_late():\n    Path('ran_late').write_text('yes')\n",
        },
    )
    found = instance_origins(root, command("tests"), "sql", "Statement", runner=runner,
                             limits=LIMITS)  # fmt: skip
    assert len(found) == MAX_ORIGINS
    # At most two lines from one file, then the suite stopped: the last file never ran.
    assert [f.split(":")[0] for f in found] == ["tests/test_a.py"] * 2 + ["tests/test_b.py"] * 2
    assert not (root / "ran_late").exists()


@pytest.mark.parametrize(
    ("module", "name"),
    [("sql", "Nowhere"), ("nosuchmodule", "Statement"), ("sql", "parse"), ("sql", "Unused")],
)
def test_no_lines_when_the_class_cannot_be_found_or_no_test_gets_one(
    tmp_path: Path, runner: SandboxRunner, module: str, name: str
) -> None:
    root = make(
        tmp_path / "proj",
        {
            "sql.py": SQL,
            "tests/test_a.py": "from sql import parse\n\n"
            "def test_parse():\n    assert parse('a')[0].text == 'a'\n",
        },
    )
    # No test gets an Unused; a name that is no class, or no module, gives nothing.
    assert instance_origins(root, command("tests"), module, name, runner=runner,
                            limits=LIMITS) == []  # fmt: skip


def test_a_suite_that_does_not_run_gives_no_lines(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(tmp_path / "proj", {"sql.py": SQL, "tests/test_a.py": "import nosuch\n"})
    assert instance_origins(root, command("tests"), "sql", "Statement", runner=runner,
                            limits=LIMITS) == []  # fmt: skip


def test_the_request_for_tests_shows_the_lines_for_a_method_only() -> None:
    lines = ["tests/test_a.py:4: first = parse('select a')[0]"]
    method = reproduction_prompt("Do it.", "Statement.first", "sql.py", "  1| ...", lines)
    assert "The project's own tests get a `Statement` like this:\n" + lines[0] in method
    # A function's request is what it was before the tracer existed.
    function = reproduction_prompt("Do it.", "parse", "sql.py", "  1| ...", lines)
    assert function == reproduction_prompt("Do it.", "parse", "sql.py", "  1| ...")
    assert "  1| ...\n\nBefore it is written" in function
