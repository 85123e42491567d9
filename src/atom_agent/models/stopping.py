"""When a plain-text reply of the local model has said all it will say: end it there.

On two cores the embedded model decodes about ten tokens a second, so every token after the
answer is a tenth of a second a user waits for nothing. Three rules end a reply early:

- **the block is complete** (only for calls made inside :func:`code_replies`: drafts,
  retries, witnesses and contracts, whose prompts ask for the implementation alone, or the
  tests alone, in one block): a fenced block in Python (or with no language) has closed, and
  its code parses and holds a definition, an assert or a ``with`` statement (a first block
  holding only an import or a shell command does not count). What follows is an explanation
  or a usage example nobody reads. The plain prompt is not cut there: asked for code *and*
  tests, a small model sometimes writes a second, fuller module after the first block, and
  the plain call must stay exactly what one plain call gives;
- **the implementation is complete and tests follow** (calls inside :func:`code_replies`
  that name what the code must define: drafts and the agent's own whole-task answers): inside
  the open block, a top-level line begins test code (``def test_…``, ``class Test…``,
  ``import pytest``, ``@pytest…``, ``assert``, ``if __name__``) after code that parses,
  defines every one of those names and reads no name it does not bind. The tests after it
  are left out of the candidate anyway (:func:`~atom_agent.replies.without_tests`), so the
  code is the same; a model asked for code and tests spends about a quarter of its tokens on
  them. The single-shot baseline is never cut there;
- **the reply loops** (every call): its last lines repeat, as a group, lines it already wrote
  twice, or each of its last lines is the line before with a few characters more, or its last
  lines share one shape (numbers aside) and each is longer than the one before (greedy
  decoding of a small model can repeat a test, or count up a test case, until the token limit:
  ``assert f([1, 2, -3])``, ``assert f([1, 2, 3, -4])`` …), or its last lines share one
  shape and count up by one fixed step each (``assert f(100, 18) == 7``, ``… 19) == 7`` …),
  or each is the line before with a short piece inserted in one or two places (the argument
  and the expected result grown together), or its last characters are one short piece
  written over and over on a line that never ends (``'1.2', '1.2', '1.2', …``, ``()()()…``),
  or that line ends in one passage of sentences three times over (a judgement's JSON string
  through llama-server: "The function is well-documented, … well-tested, …" to 2,048 tokens).

A looping reply would only have run on to ``max_tokens`` with more of the same, so the code
read from it is the same. Tool calls and structured replies (grammar-constrained JSON) are
never cut.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from atom_agent.names import free_names

Expecting = Literal["", "code", "tests", "module"]
_EXPECTING: ContextVar[tuple[Expecting, tuple[str, ...]]] = ContextVar(
    "atom_code_replies", default=("", ())
)


@contextmanager
def code_replies(expecting: Expecting = "code", names: Sequence[str] = ()) -> Iterator[None]:
    """Model calls inside the block ask for code the caller reads one way only.

    `expecting` ``"code"``: one block and nothing else, complete once it defines something;
    ``"tests"``: once it holds an assert or a ``with`` statement (a model asked for tests may
    write the code under test first); ``"module"``: a whole module whose tests the caller
    leaves out, never ended at a closing fence (a later block may be the fuller module).
    `names`: what the code must define; with ``"code"`` or ``"module"``, the reply ends
    where tests begin after code defining all of them (:func:`implementation_end`). A model
    that can (the embedded one) ends such a reply there; other models ignore it.
    """
    token = _EXPECTING.set((expecting, tuple(names)))
    try:
        yield
    finally:
        _EXPECTING.reset(token)


def expecting_now() -> Expecting:
    """What the current call's code must hold ('' outside :func:`code_replies`)."""
    return _EXPECTING.get()[0]


def names_now() -> tuple[str, ...]:
    """The names the current call's code must define (() when not said)."""
    return _EXPECTING.get()[1]


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

_TEST_START = re.compile(
    r"(?:async\s+)?def\s+test|class\s+Test|@\s*pytest\b|import\s+pytest\b|from\s+pytest\b"
    r"|if\s+__name__\b|assert\b"
)
_OPEN_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*$")


def implementation_end(text: str, names: Sequence[str]) -> int | None:
    """Where the open block of `text` begins tests after code that defines `names` (or None).

    The code before the block's first top-level line of test code (:data:`_TEST_START`)
    must parse, define every one of `names` at the top level and read no name it does not
    bind or import (a helper written after the tests would be lost, so that code is not
    done). Only complete lines count; a closed block is the other rule's business. The
    offset is that line's start: the reply ends there, its block closed.
    """
    if not names:
        return None
    lines = text.split("\n")[:-1]  # complete lines only
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    opened: tuple[int, str] | None = None
    for i, line in enumerate(lines):
        match = _OPEN_FENCE.match(line)
        if match:
            opened = None if opened is not None else (i + 1, match.group(1).lower())
    if opened is None or opened[1] not in _PYTHON_TAGS:
        return None
    first = opened[0]
    for i in range(first, len(lines)):
        if not _TEST_START.match(lines[i]):
            continue
        head = "\n".join(lines[first:i])
        try:
            tree = ast.parse(head)
        except (SyntaxError, ValueError):
            continue
        defined = {
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        if set(names) <= defined and not free_names(head):
            return starts[i]
    return None


GROWING_LINES = 6
"""Consecutive lines, each the one before plus a few characters, that mark a loop."""
_GROWTH = 3
"""At most this many characters inserted from one line to the next."""


def looping(text: str) -> bool:
    """Whether the end of `text` repeats itself (see the module docstring).

    The line rules look at complete lines only; the last, unfinished one only at its tail.
    """
    lines = [line.rstrip() for line in text.split("\n")[:-1]]
    lines = [line for line in lines if line.strip()]
    return (
        _repeats(lines)
        or _grows(lines)
        or _counts(lines)
        or _steps(lines)
        or _grow_together(lines)
        or _periodic_tail(text)
    )


PERIODIC_CHARS = 200
"""The unfinished tail of a reply that, one short piece repeated, marks a loop."""
_MAX_PERIOD = 48


_MAX_PASSAGE = 800
"""The longest passage whose third copy in a row, on a line that never ends, marks a loop."""


def _periodic_tail(text: str) -> bool:
    """The unfinished tail is one piece written over and over.

    The last PERIODIC_CHARS characters are one piece of at most _MAX_PERIOD, or the line ends
    in a longer passage (sentences of a JSON string, up to _MAX_PASSAGE characters) three
    times in a row.
    """
    tail = text[-PERIODIC_CHARS:]
    if len(tail) < PERIODIC_CHARS or "\n" in tail:
        return False
    if any(tail[p:] == tail[:-p] for p in range(1, _MAX_PERIOD + 1)):
        return True
    line = text[text.rfind("\n") + 1 :]
    for p in range(_MAX_PERIOD + 1, min(_MAX_PASSAGE, len(line) // 3) + 1):
        run = line[-3 * p :]
        if run[p:] == run[:-p]:
            return True
    return False


STEPPING_LINES = 12
"""Consecutive lines of one shape whose numbers move by one fixed step that mark a loop."""
_NUMBER = re.compile(r"\d+")


def _steps(lines: list[str]) -> bool:
    """The last STEPPING_LINES lines share one shape and their numbers move by a fixed step.

    (``assert fit(100, [1, 2, 3], 18) == [17, 12, 11]``, then ``19)``, ``20)`` …: a case
    counted up, not a table of different cases; nine ``assert double(i) == 2 * i`` are
    fewer lines than this.)
    """
    tail = lines[-STEPPING_LINES:]
    if len(tail) < STEPPING_LINES or len({_NUMBER.sub("0", line) for line in tail}) != 1:
        return False
    numbers = [[int(n) for n in _NUMBER.findall(line)] for line in tail]
    pairs = zip(numbers, numbers[1:], strict=False)
    steps = {tuple(b - a for a, b in zip(x, y, strict=True)) for x, y in pairs}
    return len(steps) == 1 and any(steps.pop())


TOGETHER_LINES = 8
"""Consecutive lines, each the one before with short pieces inserted, that mark a loop."""
TOGETHER_GROUPS = 5
"""Consecutive groups of lines (2 to _MAX_GROUP), each the one before grown so, that do."""
_MAX_GROUP = 6
_TOGETHER_PIECES = 2
_TOGETHER_CHARS = 12


def _grow_together(lines: list[str]) -> bool:
    """The last lines repeat one line, or one group of lines, growing each time.

    Numbers aside, each line is the line a group before it, or that line with one or two
    pieces of at most _TOGETHER_CHARS inserted (nothing else changed), and every repetition
    grew: TOGETHER_LINES single lines, or TOGETHER_GROUPS groups (``with pytest.raises(…):``
    then ``f("…q")``, ``f("…qr")`` …; a test function written again with one more number).
    """
    shaped = [_NUMBER.sub("0", line) for line in lines]
    for size in range(1, _MAX_GROUP + 1):
        repeats = TOGETHER_LINES if size == 1 else TOGETHER_GROUPS
        tail = shaped[-size * repeats :]
        if len(tail) < size * repeats:
            return False
        grew = 0
        for before, after in zip(tail, tail[size:], strict=False):
            if after == before:
                continue
            if not _inserted(before, after):
                break
            grew += 1
        else:
            if grew >= repeats - 1 and (size == 1 or grew < len(tail) - size):
                return True
    return False


def _inserted(before: str, after: str) -> bool:
    """`after` is `before` with one or two short pieces inserted and nothing else changed."""
    if len(after) <= len(before):
        return False
    ops = [
        op
        for op in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    return 0 < len(ops) <= _TOGETHER_PIECES and all(
        tag == "insert" and j2 - j1 <= _TOGETHER_CHARS for tag, _, _, j1, j2 in ops
    )


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
    names: tuple[str, ...] = ()
    """What the code must define: with ``code`` or ``module``, end where tests begin after
    code that defines them all (:func:`implementation_end`)."""
    checked_len: int = 0
    reason: str = ""
    end: int | None = None
    """Where the reply's text should end (None: where decoding stopped): the start of the
    tests, for ``implementation complete, tests follow``."""
    _last_lines: int = field(default=0, repr=False)

    def done(self, text: str) -> bool:
        """Whether the reply should end now (``reason`` says why)."""
        if self.reason:
            return True
        lines = text.count("\n")
        grown = len(text) - self.checked_len >= _LOOK_AGAIN_CHARS  # a line that never ends
        if lines == self._last_lines and not text.endswith("`") and not grown:
            return False
        self._last_lines = lines
        self.checked_len = len(text)
        closes = self.expecting in ("code", "tests")
        if closes and "```" in text and block_complete(text, self.expecting):
            self.reason = "code block complete"
        elif self.expecting in ("code", "module") and self.names:
            self.end = implementation_end(text, self.names)
            if self.end is not None:
                self.reason = "implementation complete, tests follow"
        if not self.reason and looping(text):
            self.reason = "reply repeats itself"
        return bool(self.reason)

    def reply(self, text: str) -> str:
        """The reply as it should read: cut where the tests began, its block closed."""
        if self.end is None:
            return text
        return text[: self.end].rstrip() + "\n```"


_LOOK_AGAIN_CHARS = 48
"""Characters a line may grow by before the watch looks again without a new line."""
