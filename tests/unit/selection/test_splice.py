"""Splicing: which function a failed check exercises, and one function put into another module."""

from __future__ import annotations

import ast
from pathlib import Path

from atom_agent.checks.contract import CheckResult, run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.selection import splice
from atom_agent.state import Check

RLE = '''import re


def rle_encode(s: str) -> str:
    """Runs as count + char."""
    out = []
    for m in re.finditer(r"(.)\\1*", s):
        out.append(f"{len(m.group(0))}{m.group(1)}")
    return "".join(out)


def rle_decode(s: str) -> str:
    """The inverse."""
    out, i = "", 0
    while i < len(s):
        j = i
        while s[j].isdigit():
            j += 1
        out += int(s[i:j]) * s[j]
        i = j + 1
    return out
'''

MATRIX = """class Matrix:
    def __init__(self, rows):
        self.rows = rows

    def __add__(self, other):
        return Matrix([[a - b for a, b in zip(x, y)] for x, y in zip(self.rows, other.rows)])

    def __eq__(self, other):
        return self.rows == other.rows
"""


def test_a_check_that_raised_points_at_the_function_it_raised_in(tmp_path: Path) -> None:
    (tmp_path / "impl.py").write_text(RLE)
    checks = [
        Check(call="rle_decode('3')", raises="ValueError"),
        Check(call="rle_encode('aab')", expect="'2a1b'"),
        Check(call="rle_decode('2a1b')", expect="'aab'"),
    ]
    report = run_contract(
        checks, staging=tmp_path, runner=default_runner(), limits=Limits(timeout_s=30.0)
    )
    failed = report.results[0]
    # The sandbox says where: the innermost frame in the module under test.
    assert failed.status == "error" and failed.function == "rle_decode"
    assert failed.line == "line 17: while s[j].isdigit():"
    assert splice.pointed_at(failed, splice.functions_of(RLE)) == "rle_decode"


def test_a_wrong_value_points_at_what_the_expression_computes_last() -> None:
    functions = splice.functions_of(MATRIX)
    assert set(functions) == {"Matrix.__init__", "Matrix.__add__", "Matrix.__eq__"}
    added = CheckResult(Check(call="a = Matrix([[1]])\na + a", expect="Matrix([[2]])"), "failed")
    assert splice.pointed_at(added, functions) == "Matrix.__add__"
    built = CheckResult(Check(call="Matrix([])", raises="ValueError"), "failed")
    assert splice.pointed_at(built, functions) == "Matrix.__init__"
    prop = (
        "from hypothesis import given\n@given(st.text())\ndef p(s):\n    assert dec(enc(s)) == s\n"
    )
    held = CheckResult(Check(call=prop + "holds(p)", expect="'holds'"), "failed")
    assert splice.pointed_at(held, ["enc", "dec"]) == "dec"  # what the property compares
    both = CheckResult(Check(call="dec('a') + enc('b')", expect="'ab'"), "failed")
    assert splice.pointed_at(both, ["enc", "dec"]) is None  # two outermost: not certain
    missing = CheckResult(Check(call="Matrix([[1]]).shape", expect="(1, 1)"), "error")
    assert splice.pointed_at(missing, functions) is None  # nothing of the module to rewrite


def test_the_reply_is_spliced_in_with_its_imports_and_helpers() -> None:
    reply = (
        "import string\n\n"
        "def rle_decode(s):\n    if not _valid(s):\n        raise ValueError(s)\n"
        "    return ''.join(int(n) * c for n, c in re.findall(r'(\\d+)(\\D)', s))\n\n"
        "def _valid(s):\n    return all(c in string.digits + string.ascii_letters for c in s) "
        "and (not s or s[-1].isalpha()) and (not s or s[0].isdigit())\n"
    )
    spliced = splice.splice(RLE, "rle_decode", reply)
    assert spliced is not None
    scope: dict[str, object] = {}
    exec(compile(spliced, "impl.py", "exec"), scope)  # noqa: S102 - our own test input
    decode, encode = scope["rle_decode"], scope["rle_encode"]
    assert decode(encode("aaabcc")) == "aaabcc"  # type: ignore[operator]
    assert "re.finditer" in spliced and spliced.count("def rle_decode") == 1
    try:
        decode("a3")  # type: ignore[operator]
    except ValueError:
        pass
    else:
        raise AssertionError("the spliced decoder should reject 'a3'")


def test_a_method_is_spliced_at_its_indentation_whatever_the_reply_wrote() -> None:
    as_function = "def __add__(self, other):\n    return Matrix([[a + b for a, b in zip(x, y)]"
    as_function += " for x, y in zip(self.rows, other.rows)])\n"
    as_class = "class Matrix:\n" + "".join(f"    {line}\n" for line in as_function.splitlines())
    for reply in (as_function, as_class):
        spliced = splice.splice(MATRIX, "Matrix.__add__", reply)
        assert spliced is not None
        scope: dict[str, object] = {}
        exec(compile(spliced, "impl.py", "exec"), scope)  # noqa: S102 - our own test input
        m = scope["Matrix"]
        assert m([[1, 2]]) + m([[3, 4]]) == m([[4, 6]])  # type: ignore[operator]
        assert [n.name for n in ast.parse(spliced).body] == ["Matrix"]
    assert splice.splice(MATRIX, "Matrix.__add__", "def other():\n    pass\n") is None
    assert splice.splice(MATRIX, "Matrix.__add__", "def __add__(self, o):\n  return (") is None


def test_a_next_attempt_is_told_the_tasks_failed_checks_first() -> None:
    from atom_agent.checks.contract import ContractReport
    from atom_agent.selection.drafts import failure_lines

    model = CheckResult(Check(call="f(1)", expect="2"), "failed", got="3")
    stated = CheckResult(Check(call="f(0)", expect="0", origin="task"), "failed", got="1")
    note = failure_lines(ContractReport(results=[model, stated]))
    assert note.index("f(0)") < note.index("f(1)")
