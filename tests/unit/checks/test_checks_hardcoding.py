"""The anti-hard-coding AST check: what it flags, where, and what it leaves alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from atom_agent.checks import Thresholds, check_file, check_source

HONEST = (
    '''
"""An LRU cache.

This module docstring is long on purpose: '''
    + "documentation " * 60
    + '''
"""

from collections import OrderedDict


class LRUCache:
    """A least-recently-used cache. '''
    + "Explained at length. " * 40
    + '''"""

    PRIMES = (2, 3, 5, 7, 11)
    MESSAGES = {"missing": "key not found", "full": "cache is full"}

    def __init__(self, capacity: int) -> None:
        """Make an empty cache. '''
    + "Details. " * 80
    + '''"""
        self.capacity = capacity
        self.data = OrderedDict()

    def get(self, key):
        if key not in self.data:
            raise KeyError(self.MESSAGES["missing"])
        self.data.move_to_end(key)
        return self.data[key]

    async def aget(self, key):
        """Async docstrings are docstrings too. '''
    + "Yes. " * 100
    + '''"""
        return self.get(key)

    def table(self, n):
        return [[i * j for j in range(n)] for i in range(n)]
'''
)


def test_honest_code_with_long_docstrings_passes() -> None:
    report = check_source(HONEST)
    assert report.ok, report.summary()
    assert report.findings == [] and "no hard-coded outputs" in report.summary()


def test_large_string_is_flagged_with_its_line() -> None:
    source = textwrap.dedent(
        '''
        """Docstring."""

        def solve():
            return EXPECTED

        EXPECTED = "'''
        + "0123456789" * 50
        + """"
    """
    )
    report = check_source(source)
    assert not report.ok
    [finding] = report.findings
    assert (finding.line, finding.kind, finding.size) == (7, "large_string", 500)
    assert "compute the value" in finding.reason
    assert report.summary().startswith("impl.py:7: large_string")


def test_multiline_and_concatenated_strings_and_fstrings() -> None:
    source = (
        "def answer(n):\n"
        '    out = ("' + "a" * 250 + '"\n'
        '           "' + "b" * 250 + '")\n'
        '    msg = f"{n}: ' + "c" * 450 + '"\n'
        '    big = """\n' + ("line of output\n" * 40) + '"""\n'
        "    return out, msg, big\n"
    )
    report = check_source(source)
    assert [(f.line, f.kind) for f in report.findings] == [
        (2, "large_string"),
        (4, "large_string"),
        (5, "large_string"),
    ]
    assert report.findings[2].end_line == 46


def test_bytes_blob_is_flagged() -> None:
    source = "PNG = " + repr(bytes(range(256)) * 2) + "\n"
    report = check_source(source)
    assert [(f.line, f.kind, f.size) for f in report.findings] == [(1, "large_bytes", 512)]


def test_literal_tables_are_flagged_once_at_the_outermost_literal() -> None:
    rows = ",\n".join(f"    ({i}, {i * i}, {-i})" for i in range(30))
    source = (
        "SQUARES = [" + ", ".join(str(i * i) for i in range(40)) + "]\n"
        "ANSWERS = {" + ", ".join(f"'q{i}': {i}" for i in range(40)) + "}\n"
        "TABLE = [\n" + rows + "\n]\n"
        "SEEN = {" + ", ".join(str(i) for i in range(33)) + "}\n"
    )
    report = check_source(source)
    kinds = [(f.line, f.kind, f.size) for f in report.findings]
    assert kinds == [
        (1, "literal_table", 40),
        (2, "literal_table", 40),
        (3, "literal_table", 90),
        (35, "literal_table", 33),
    ]
    assert "lookup table" in report.findings[0].reason
    assert report.findings[2].end_line == 34


def test_computed_collections_are_not_tables() -> None:
    source = (
        "VALUES = [" + ", ".join(f"f({i})" for i in range(100)) + "]\n"
        "MERGED = {**BASE, " + ", ".join(f"'k{i}': {i}" for i in range(10)) + "}\n"
        "SMALL = (1, 2, 3)\n"
    )
    assert check_source(source).ok


def test_a_big_string_inside_a_small_table_is_still_found() -> None:
    source = "CASES = {'a': '" + "x" * 600 + "', 'b': 'y'}\n"
    report = check_source(source)
    assert [(f.line, f.kind) for f in report.findings] == [(1, "large_string")]


def test_thresholds_are_configurable() -> None:
    source = 'S = "' + "z" * 100 + '"\nL = [1, 2, 3, 4, 5, 6]\nB = b"' + "q" * 20 + '"\n'
    assert check_source(source).ok
    strict = Thresholds(max_string_chars=50, max_items=5, max_bytes=10)
    report = check_source(source, thresholds=strict)
    assert [(f.line, f.kind) for f in report.findings] == [
        (1, "large_string"),
        (2, "literal_table"),
        (3, "large_bytes"),
    ]
    leaves = Thresholds(max_items=100, max_constants=8)
    nested = "M = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]\n"
    assert [f.size for f in check_source(nested, thresholds=leaves).findings] == [9]


def test_syntax_errors_and_files(tmp_path: Path) -> None:
    report = check_source("def broken(:\n    pass\n")
    assert not report.ok and report.findings[0].kind == "syntax_error"
    impl = tmp_path / "impl.py"
    impl.write_text('X = "' + "w" * 401 + '"\n')
    from_file = check_file(impl)
    assert from_file.path == "impl.py" and [f.line for f in from_file.findings] == [1]
    data = from_file.to_dict()
    assert data["ok"] is False and data["findings"][0]["kind"] == "large_string"
