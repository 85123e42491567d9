"""Docstring examples as checks: setup lines chained, outputs code cannot compare left out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from atom_agent.checks.contract import CheckResult, run_contract
from atom_agent.project.checks import (
    docstring_checks,
    explain,
    project_examples,
    reproducing,
    unmutated_checks,
)
from atom_agent.sandbox import Limits, default_runner

DOC = """Peek at things.

>>> p = Peekable([1, 2, 3])
>>> p.peek()
1
>>> p[1:]
[2, 3]
>>> Peekable([]).peek()
Traceback (most recent call last):
  ...
StopIteration
>>> p
<Peekable object at 0x7f>
>>> print("a\\nb")
a
b
>>> len(list(p))  # doctest: +ELLIPSIS
3
"""


def test_examples_become_checks_with_their_setup() -> None:
    checks = docstring_checks(DOC)
    described = [c.describe() for c in checks]
    assert described == [
        "p = Peekable([1, 2, 3]) ; p.peek() == 1",
        "p = Peekable([1, 2, 3]) ; p[1:] == [2, 3]",
        "p = Peekable([1, 2, 3]) ; Peekable([]).peek() raises StopIteration",
        "p = Peekable([1, 2, 3]) ; '\\n'.join(line.rstrip() for line in str('a\\nb').splitlines())"
        " == 'a\\nb'",
        "p = Peekable([1, 2, 3]) ; len(list(p)) == 3",
    ]
    assert all(c.origin == "task" for c in checks)


def test_no_examples_no_checks() -> None:
    assert docstring_checks("Just prose.\n\nNo examples here.") == []
    assert docstring_checks(">>> broken(\n") == []


MODULE = '''"""Render rows as a box.

>>> print(render([1, 22]))
+----+
| 1  |
| 22 |
+----+
>>> width([1, 22])
2
"""


def _cell(value, width):
    """One cell: the value left-aligned in `width` characters."""
    raise NotImplementedError


def width(values):
    """The widest value's length.

    >>> width(["a", "bbb"])
    3
    """
    return max(len(str(v)) for v in values)


def render(values):
    """The box around the values, one per line.

    >>> print(render(["x"]))
    +---+
    | x |
    +---+
    """
    w = width(values)
    rule = "+" + "-" * (w + 2) + "+"
    return "\\n".join([rule, *("| " + _cell(v, w) + " |" for v in values), rule])


def broken():
    """An example that fails, but not in _cell.

    >>> broken()
    1
    """
    return {}["missing"]
'''

README = """# box

    >>> from box import render
    >>> rows = ["ab", "c"]
    >>> print(render(rows))
    +----+
    | ab |
    | c  |
    +----+
    >>> render(rows).count("+")  # the corners
    4
"""


def _project(root: Path) -> Path:
    (root / "box").mkdir(parents=True)
    (root / "box" / "__init__.py").write_text(MODULE)
    (root / "README.md").write_text(README)
    return root


def test_examples_that_fail_inside_the_target_are_kept_the_others_dropped(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    examples = project_examples(root, "box/__init__.py", "_cell")
    # The module's docstrings (the target's own has none) and the README, printed text included.
    assert {c.criterion.split(":")[0] for c in examples} == {
        "box/__init__.py, docstring of module",
        "box/__init__.py, docstring of width",
        "box/__init__.py, docstring of render",
        "box/__init__.py, docstring of broken",
        "README.md",
    }
    report = run_contract(examples, staging=root, runner=default_runner(),
                          limits=Limits(timeout_s=30.0), python_path=[root],
                          module="box")  # fmt: skip
    kept = reproducing(examples, report, "_cell")
    # width() passes already and broken() fails elsewhere: neither says anything about _cell.
    assert sorted(c.criterion.split(":")[0] for c in kept) == [
        "README.md",
        "README.md",
        "box/__init__.py, docstring of module",
        "box/__init__.py, docstring of render",
    ]
    right = MODULE.replace("raise NotImplementedError", "return str(value).ljust(width)")
    (root / "box" / "__init__.py").write_text(right)
    after = run_contract(kept, staging=root, runner=default_runner(),
                         limits=Limits(timeout_s=30.0), python_path=[root],
                         module="box")  # fmt: skip
    assert [r.status for r in after.results] == ["passed"] * 4
    wrong = right.replace("ljust", "rjust")
    (root / "box" / "__init__.py").write_text(wrong)
    after = run_contract(kept, staging=root, runner=default_runner(),
                         limits=Limits(timeout_s=30.0), python_path=[root],
                         module="box")  # fmt: skip
    # Right-aligned cells print another box where widths differ; a one-cell box and the
    # count of corners do not tell them apart.
    assert sorted(r.status for r in after.results) == ["failed", "failed", "passed", "passed"]


def test_no_documentation_no_examples(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    raise NotImplementedError\n")
    assert project_examples(tmp_path, "m.py", "f") == []
    assert project_examples(tmp_path, "missing.py", "f") == []


SET_IN = '''def set_in(d, key, value, factory=dict):
    """A copy of d with key set to value.

    >>> set_in({"a": 1}, "b", 2)
    {'a': 1, 'b': 2}
    >>> set_in(d={}, key="a", value=0)
    {'a': 0}
    >>> set_in(dict(a=1), "a", 2)
    {'a': 2}
    """
    raise NotImplementedError
'''


@pytest.mark.parametrize(
    ("body", "statuses"),
    [
        ("out = factory(d)\n    out[key] = value\n    return out", ["passed", "passed"]),
        ("d[key] = value\n    return d", ["failed", "failed"]),
    ],
)
def test_never_mutates_d_reruns_the_examples_and_compares_d(
    tmp_path: Path, body: str, statuses: list[str]
) -> None:
    (tmp_path / "m.py").write_text(SET_IN.replace("raise NotImplementedError", body))
    examples = docstring_checks(SET_IN)
    clause = "Implement it so that it never mutates `d`."
    checks = unmutated_checks(clause, "set_in", ["d", "key", "value", "factory"], examples)
    # Literal dicts by position and by keyword; `dict(a=1)` is a call, not a literal: no check.
    assert [c.describe() for c in checks] == [
        "given = {'a': 1} ; set_in(given, 'b', 2) ; given == {'a': 1}",
        "given = {} ; set_in(d=given, key='a', value=0) ; given == {}",
    ]
    assert all(c.criterion == clause for c in checks)
    report = run_contract(checks, staging=tmp_path, runner=default_runner(),
                          limits=Limits(timeout_s=30.0), module="m")  # fmt: skip
    assert [r.status for r in report.results] == statuses


def test_no_mutation_clause_or_no_such_parameter_no_check() -> None:
    examples = docstring_checks(SET_IN)
    params = ["d", "key", "value", "factory"]
    assert unmutated_checks("It returns a copy.", "set_in", params, examples) == []
    assert unmutated_checks("It never mutates `other`.", "set_in", params, examples) == []


def test_a_failed_printed_example_is_explained_by_its_first_wrong_line() -> None:
    (check,) = docstring_checks(">>> rows = [1]\n>>> print(box(rows))\n+--+\n|1 |\n+--+\n",
                                origin="README.md")  # fmt: skip
    result = CheckResult(check, "failed", got=repr("+--+\n| 1|\n+--+"), reason="expected …")
    assert explain(result) == "- README.md: print(box(rows)): line 2 should be '|1 |', it is '| 1|'"
    short = CheckResult(check, "failed", got=repr("+--+"), reason="expected …")
    assert explain(short) == "- README.md: print(box(rows)): 3 lines expected, 1 given"
    (value,) = docstring_checks(">>> f(2)\n4\n")
    wrong = CheckResult(value, "failed", got="5", reason="expected 4, got 5")
    assert explain(wrong) == "- docstring: f(2): expected 4, got 5"


def test_documentation_that_is_a_link_a_fifo_or_huge_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "m.py").write_text("def f():\n    raise NotImplementedError\n")
    outside = tmp_path / "secret.md"
    outside.write_text(">>> f()\n1\n")
    (root / "README.md").symlink_to(outside)
    os.mkfifo(root / "docs" / "pipe.md")  # reading it would block forever
    (root / "docs" / "huge.rst").write_text(">>> f()\n1\n" + "x" * 400_000)
    (root / "docs" / "ok.rst").write_text(">>> f()\n2\n")
    (root / "doc").symlink_to(tmp_path)  # a folder link out of the project
    assert [c.criterion for c in project_examples(root, "m.py", "f")] == ["docs/ok.rst: f() -> 2"]


def test_a_clause_check_is_explained_by_its_call_not_by_the_clause() -> None:
    examples = docstring_checks(SET_IN)
    clause = "Implement it as described: it never mutates `d`."
    check = unmutated_checks(clause, "set_in", ["d", "key", "value", "factory"], examples)[0]
    result = CheckResult(check, "failed", got="{'a': 1, 'b': 2}", reason="expected …, got …")
    assert explain(result) == (
        "- given = {'a': 1} ; set_in(given, 'b', 2) ; given == {'a': 1}: expected …, got …"
    )


def test_a_check_that_raises_inside_the_target_is_explained_with_its_arguments(
    tmp_path: Path,
) -> None:
    (tmp_path / "seg.py").write_text(
        "def segment(align, width):\n"
        '    if align == "left":\n'
        '        return ":" + "-" * (width - 1)\n'
        '    raise ValueError(f"Invalid alignment: {align}")\n'
        "\n\n"
        "def rule(aligns):\n"
        '    return "|".join(segment(a, 4) for a in aligns)\n'
    )
    (check,) = docstring_checks(">>> rule(['left', 'decimal'])\n':---|---:'\n", origin="README.md")
    report = run_contract([check], staging=tmp_path, runner=default_runner(),
                          limits=Limits(timeout_s=30.0), module="seg")  # fmt: skip
    (result,) = report.results
    assert (result.function, result.arguments) == ("segment", "align='decimal', width=4")
    assert explain(result) == (
        "- README.md: rule(['left', 'decimal']): raised ValueError: Invalid alignment: decimal"
        " in segment(align='decimal', width=4), line 4: "
        'raise ValueError(f"Invalid alignment: {align}")'
    )
