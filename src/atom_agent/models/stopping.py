"""When a plain-text reply of the local model has said all it will say: end it there.

On two cores the embedded model decodes about ten tokens a second, so every token after the
answer is a tenth of a second a user waits for nothing. Every text prompt of the agent asks for
one fenced ```python block; what a small model writes after that block (an explanation, a usage
example, the same test again and again until ``max_tokens``) is read by nobody: the code is
read out of the first complete block. Two rules end a reply early, and both only cut what
comes after the text the agent reads, so greedy replies keep the same code:

- **the block is complete**: a fenced block in Python (or with no language) has closed, and
  its code parses and holds a definition, an assert or a ``with`` statement (a first block
  holding only an import or a shell command does not count);
- **the reply loops**: its last lines repeat, as a group, lines it already wrote twice, or
  each of its last lines is the line before with a few characters more (greedy decoding of a
  small model can repeat a test, or count up a test case, until the token limit).

Tool calls and structured replies (grammar-constrained JSON) are never cut.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)
_PYTHON_TAGS = frozenset({"", "python", "py", "python3"})
LOOP_LINES = 3
"""Lines in the repeated group that marks a loop."""
LOOP_REPEATS = 3
"""How often the group must appear (its last occurrence included)."""
_MIN_GROUP_CHARS = 24
"""A group shorter than this (blank lines, closing brackets) is no evidence of a loop."""


def block_complete(text: str) -> bool:
    """Whether `text` holds a closed Python block whose code parses and says something.

    "Says something": a function or class definition, an assert or a ``with`` statement
    (a test's ``with pytest.raises(...)``), at any depth.
    """
    for match in _BLOCK.finditer(text):
        if match.group(1).lower() not in _PYTHON_TAGS:
            continue
        try:
            tree = ast.parse(match.group(2))
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(n, _SUBSTANTIVE) for n in ast.walk(tree)):
            return True
    return False


_SUBSTANTIVE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assert, ast.With)


GROWING_LINES = 6
"""Consecutive lines, each the one before plus a few characters, that mark a loop."""
_GROWTH = 3
"""At most this many characters inserted from one line to the next."""


def looping(text: str) -> bool:
    """Whether the end of `text` repeats itself (see the module docstring)."""
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip()]
    return _repeats(lines) or _grows(lines)


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
    """Watches a reply as it is decoded; says when it is complete or looping.

    Feed it the reply's text so far (:meth:`done`); it only looks again when a new line or
    a fence arrived, so watching costs next to nothing per token.
    """

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
        if "```" in text and block_complete(text):
            self.reason = "code block complete"
        elif text.endswith("\n") and looping(text):
            self.reason = "reply repeats itself"
        return bool(self.reason)
