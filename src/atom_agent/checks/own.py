"""The drafts' own tests: the asserts a model wrote after its code, read back as checks.

A failing test the run wrote is evidence: a draft that meets the contract and the drafts' own
tests outranks one that meets the contract alone, and an attempt whose code fails one is not
passed (it retries, shown the failing test). A test the task's own example contradicts (the
same call, another result) is outranked by the task: the embedded 1.5B model's tests are often
wrong where its code is right, and the user's word wins over a model's.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from atom_agent.names import free_names
from atom_agent.replies import written_tests
from atom_agent.state import Check
from atom_agent.workspace.atomic import atomic_write_json

from .asserts import checks_from_tests

OWN_CRITERION = "the tests the drafts wrote hold"
"""The criterion of every own check (no clause of the task states it)."""

OWN_FILE = "own-checks.json"
"""Beside an attempt's staging: the own checks its code was run on (the step's earlier ones too)."""

STRONGER = ("task", "user")
"""Origins whose check on the same call outranks an own test: the user's word."""


def own_checks(code: str, defines: Sequence[str]) -> list[Check]:
    """The checks the tests after `code` state, for what the step defines (origin ``own``).

    `code` is a draft's whole block, tests included (``extract_code(reply, tests=True)``).
    A test that calls none of `defines` checks nothing of the step and is left out.
    """
    found = checks_from_tests(written_tests(code), criterion=OWN_CRITERION)
    wanted = set(defines)
    return [
        c.model_copy(update={"origin": "own"})
        for c in found
        if not wanted or wanted & set(free_names(c.call))
    ]


def merged(checks: Sequence[Check], *groups: Iterable[Check]) -> list[Check]:
    """The own checks of `groups`, once each, without those `checks` already state."""
    seen = {c.describe() for c in checks}
    out: list[Check] = []
    for group in groups:
        for check in group:
            key = check.describe()
            if key not in seen:
                seen.add(key)
                out.append(check)
    return out


def outranking(own: Check, checks: Sequence[Check]) -> Check | None:
    """The task's (or a user's) check of the very same call that wants another result.

    Where the task's own example and a model's test disagree on one call, the task wins:
    the model's test is outranked, never the other way round.
    """
    call = _norm(own.call)
    for check in checks:
        if check.origin not in STRONGER or _norm(check.call) != call:
            continue
        if check.raises.strip() or own.raises.strip():
            if check.raises.strip() != own.raises.strip():
                return check
        elif not _same_value(check.expect, own.expect):
            return check
    return None


def save_own(folder: Path, checks: Sequence[Check]) -> None:
    """Write :data:`OWN_FILE` in `folder` (an attempt's folder)."""
    atomic_write_json(folder / OWN_FILE, [c.model_dump() for c in checks])


def load_own(folder: Path) -> list[Check]:
    """The own checks :func:`save_own` wrote in `folder` (none when it wrote nothing)."""
    path = folder / OWN_FILE
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return []
    return [Check.model_validate(item) for item in data if isinstance(item, dict)]


def _norm(source: str) -> str:
    try:
        return ast.unparse(ast.parse(source.strip()))
    except (SyntaxError, ValueError):
        return " ".join(source.split())


def _same_value(a: str, b: str) -> bool:
    """Whether two expected-value expressions state the same value (literals compared)."""
    try:
        return bool(ast.literal_eval(a.strip()) == ast.literal_eval(b.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _norm(a) == _norm(b)
