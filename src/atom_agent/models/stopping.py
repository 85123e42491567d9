"""When a plain-text reply of the local model has said all it will say: end it there.

On two cores the embedded model decodes about ten tokens a second, so every token after the
answer is a tenth of a second a user waits for nothing. Two rules end a reply early:

- **the block is complete** (only for calls made inside :func:`code_replies`: drafts,
  retries, witnesses and contracts, whose prompts ask for the implementation alone, or the
  tests alone, in one block): a fenced block in Python (or with no language) has closed, and
  its code parses and holds a definition, an assert or a ``with`` statement (a first block
  holding only an import or a shell command does not count). What follows is an explanation
  or a usage example nobody reads. The plain prompt is not cut there: asked for code *and*
  tests, a small model sometimes writes a second, fuller module after the first block, and
  the plain call must stay exactly what one plain call gives;
- **the reply loops** (every call): its last lines repeat, as a group, lines it already wrote
  twice, or each of its last lines is the line before with a few characters more, or its last
  lines share one shape (numbers aside) and each is longer than the one before (greedy
  decoding of a small model can repeat a test, or count up a test case, until the token limit:
  ``assert f([1, 2, -3])``, ``assert f([1, 2, 3, -4])`` …).

A looping reply would only have run on to ``max_tokens`` with more of the same, so the code
read from it is the same. Tool calls and structured replies (grammar-constrained JSON) are
never cut.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

Expecting = Literal["", "code", "tests"]
_EXPECTING: ContextVar[Expecting] = ContextVar("atom_code_replies", default="")


@contextmanager
def code_replies(expecting: Expecting = "code") -> Iterator[None]:
    """Model calls inside the block ask for one code block and nothing else.

    `expecting` ``"code"``: the block is complete once it defines something; ``"tests"``:
    once it holds an assert or a ``with`` statement (a model asked for tests may write the
    code under test first). A model that can (the embedded one) ends such a reply there;
    other models ignore it.
    """
    token = _EXPECTING.set(expecting)
    try:
        yield
    finally:
        _EXPECTING.reset(token)


def expecting_now() -> Expecting:
    """What the current call's one code block must hold ('' outside :func:`code_replies`)."""
    return _EXPECTING.get()


_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_PYTHON_TAGS = frozenset({"", "python", "py", "python3"})
LOOP_LINES = 3
"""Lines in the repeated group that marks a loop."""
LOOP_REPEATS = 3
"""How often the group must appear (its last occurrence included)."""
_MIN_GROUP_CHARS = 24
"""A group shorter than this (blank lines, closing brackets) is no evidence of a loop."""


def block_complete(text: str, expecting: Expecting = "code") -> bool:
    """Whether `text` holds a closed Python block whose code parses and says something.

    "Says something": for ``code``, a function or class definition, an assert or a ``with``
    statement; for ``tests``, an assert or a ``with`` statement (``pytest.raises``); at any
    depth.
    """
    wanted = _TESTS if expecting == "tests" else _SUBSTANTIVE
    for match in _BLOCK.finditer(text):
        if match.group(1).lower() not in _PYTHON_TAGS:
            continue
        try:
            tree = ast.parse(match.group(2))
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(n, wanted) for n in ast.walk(tree)):
            return True
    return False


_TESTS = (ast.Assert, ast.With)
_SUBSTANTIVE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, *_TESTS)


GROWING_LINES = 6
"""Consecutive lines, each the one before plus a few characters, that mark a loop."""
_GROWTH = 3
"""At most this many characters inserted from one line to the next."""


def looping(text: str) -> bool:
    """Whether the end of `text` repeats itself (see the module docstring)."""
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip()]
    return _repeats(lines) or _grows(lines) or _counts(lines)


def _grows(lines: list[str]) -> bool:
    """Each of the last GROWING_LINES lines is the line before with ≤ _GROWTH chars inserted."""
    tail = lines[-GROWING_LINES:]
    if len(tail) < GROWING_LINES:
        return False
    for before, after in zip(tail, tail[1:], strict=False):
        extra = len(after) - len(before)
        if not 0 < extra <= _GROWTH:
            return False
        head = 0
        while head < len(before) and before[head] == after[head]:
            head += 1
        if before[head:] != after[head + extra :]:
            return False
    return True


COUNTING_LINES = 8
"""Consecutive lines of one shape, each longer than the one before, that mark a loop."""


def _shape(line: str) -> str:
    """The line with every number 0 and every run of numbers ``0, 0, -0`` one ``0``."""
    return re.sub(r"-?0(?:,\s*-?0)*", "0", re.sub(r"\d+", "0", line))


def _counts(lines: list[str]) -> bool:
    """The last COUNTING_LINES lines share one shape and grow: a counted-up test case."""
    tail = lines[-COUNTING_LINES:]
    if len(tail) < COUNTING_LINES or len({_shape(line) for line in tail}) != 1:
        return False
    return all(len(a) < len(b) for a, b in zip(tail, tail[1:], strict=False))


def _repeats(lines: list[str]) -> bool:
    """The last LOOP_LINES lines appeared as a group LOOP_REPEATS times."""
    if len(lines) < LOOP_LINES * LOOP_REPEATS:
        return False
    group = lines[-LOOP_LINES:]
    if sum(len(line.strip()) for line in group) < _MIN_GROUP_CHARS:
        return False
    seen = 0
    for start in range(len(lines) - LOOP_LINES + 1):
        if lines[start : start + LOOP_LINES] == group:
            seen += 1
    return seen >= LOOP_REPEATS


@dataclass
class ReplyWatch:
    """Watches a reply as it is decoded; says when it loops, or (code only) is complete.

    Feed it the reply's text so far (:meth:`done`); it only looks again when a new line or
    a fence arrived, so watching costs next to nothing per token.
    """

    expecting: Expecting = ""
    """End the reply at its first complete block of this kind too ('': only when it loops)."""
    checked_len: int = 0
    reason: str = ""
    _last_lines: int = field(default=0, repr=False)

    def done(self, text: str) -> bool:
        """Whether the reply should end now (``reason`` says why)."""
        if self.reason:
            return True
        lines = text.count("\n")
        if lines == self._last_lines and not text.endswith("`"):
            return False
        self._last_lines = lines
        self.checked_len = len(text)
        if self.expecting and "```" in text and block_complete(text, self.expecting):
            self.reason = "code block complete"
        elif text.endswith("\n") and looping(text):
            self.reason = "reply repeats itself"
        return bool(self.reason)
