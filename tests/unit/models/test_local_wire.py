"""What is kept of a write_file call cut off at the token limit."""

from __future__ import annotations

import ast
import json

import pytest

from atom_agent.models.local_wire import salvage_write


def _cut(path: str, content: str, keep: int) -> str:
    """A write_file reply in the local tool protocol, cut off after `keep` characters."""
    reply = json.dumps({"name": "write_file", "arguments": {"path": path, "content": content}})
    return reply[:keep]


REPEATING = "from impl import f\n\n\ndef test_f():\n" + "    assert f(1) == 2\n" * 40


def test_repeated_assertions_are_dropped_and_the_unfinished_line_too() -> None:
    text = _cut("test.py", REPEATING, 250)  # cut in the middle of an assertion
    kept = salvage_write(text)

    assert kept is not None and kept.path == "test.py"
    assert kept.content == "from impl import f\n\n\ndef test_f():\n    assert f(1) == 2\n"
    assert kept.kept == 5 and kept.dropped_repeats == 5  # 6 whole assertions in 250 chars


def test_an_unfinished_statement_is_cut_back_until_the_file_parses() -> None:
    content = (
        "import pytest\nfrom impl import f\n\n\ndef test_one():\n    assert f(1) == 2\n\n\n"
        "@pytest.mark.parametrize('x, y', [\n    (1, 2),\n    (2, 3),\n    (3, 4),\n])\n"
        "def test_many(x, y):\n    assert f(x) == y\n"
    )
    kept = salvage_write(_cut("test.py", content, content.index("(3, 4)") + 60))

    assert kept is not None
    ast.parse(kept.content)
    assert "def test_one" in kept.content and "parametrize" not in kept.content


def test_escapes_and_a_cut_inside_an_escape_are_decoded() -> None:
    content = 'def f(s):\n    return s.replace("\\t", " ")  # tab\n\nx = "é"\n'
    reply = _cut("impl.py", content, 10_000)
    whole = salvage_write(reply[:-3])  # the closing quote and braces are missing
    assert whole is not None and whole.content == content
    in_escape = reply.index("\\u00e9") + 4  # cut inside the escape of "é"
    kept = salvage_write(reply[:in_escape])
    assert (
        kept is not None and kept.content == 'def f(s):\n    return s.replace("\\t", " ")  # tab\n'
    )
    after_backslash = reply.index("\\\\t") + 1  # inside the first escape: no whole line yet
    assert salvage_write(reply[:after_backslash]) is None


def test_a_complete_content_string_is_kept_whole() -> None:
    content = "def f(x):\n    return x + 1"
    kept = salvage_write(_cut("impl.py", content, 10_000)[:-2])  # only the braces are missing

    assert kept is not None and kept.content == content + "\n"


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {"path": "impl.py"',  # not a write
        '{"name": "write_file", "arguments": {"path": "test.py", "content": "from impl',
        '{"name": "write_file", "arguments": {"content": "x = 1\\ny = 2\\n", "path": "a.py"',
        '{"name": "write_file", "arguments": {"path": "test.py"',  # no content yet
        "not json at all",
        "",
    ],
)
def test_nothing_usable_gives_none(text: str) -> None:
    assert salvage_write(text) is None
