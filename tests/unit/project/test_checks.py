"""Docstring examples as checks: setup lines chained, outputs code cannot compare left out."""

from __future__ import annotations

from atom_agent.project.checks import docstring_checks

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
        "p = Peekable([1, 2, 3]) ; len(list(p)) == 3",
    ]
    assert all(c.origin == "task" for c in checks)


def test_no_examples_no_checks() -> None:
    assert docstring_checks("Just prose.\n\nNo examples here.") == []
    assert docstring_checks(">>> broken(\n") == []
