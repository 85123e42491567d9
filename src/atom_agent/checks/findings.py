"""What the gaming pass reads against: the checks' literal inputs and results, and a finding.

Shared by the pass over code (:mod:`.gaming`), over test files (:mod:`.rigged`) and its run on
unseen inputs (:mod:`.probe`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from atom_agent.state import Check

GAMING_CRITERION = "the code computes its results instead of answering the checks"
"""The criterion a gaming finding fails (the rule table's ``answers_the_checks`` row)."""

MISSING = object()
"""No literal value (what :func:`literal_node` gives for anything computed)."""


@dataclass(frozen=True)
class Finding:
    """One place where code answers the checks instead of the task."""

    kind: str
    file: str
    line: int
    reason: str

    def describe(self) -> str:
        """``impl.py:3: lookup_table: …`` on one line."""
        return f"{self.file}:{self.line}: {self.kind}: {self.reason}"


@dataclass(frozen=True)
class Case:
    """One check's call of a step's function, with literal arguments and result."""

    function: str
    args: tuple[Any, ...]
    expect: Any
    has_expect: bool


def cases_of(checks: Sequence[Check], defines: Sequence[str]) -> Iterator[Case]:
    """Each call of a step's function in `checks` with literal arguments (and its result)."""
    wanted = set(defines)
    for check in checks:
        lines = check.call.strip().splitlines()
        if not lines:
            continue
        try:
            node = ast.parse(lines[-1].strip(), mode="eval").body
        except SyntaxError:
            continue
        expect = _literal(check.expect) if check.expect.strip() and not check.raises else MISSING
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            name = name_of(call.func)
            if not name or (wanted and name.rsplit(".", 1)[-1] not in wanted):
                continue
            values = [literal_node(a) for a in [*call.args, *(k.value for k in call.keywords)]]
            if not values or any(v is MISSING for v in values):
                continue
            top = call is node
            yield Case(
                name.rsplit(".", 1)[-1],
                tuple(values),
                expect if top else MISSING,
                top and expect is not MISSING,
            )


def _literal(source: str) -> Any:
    try:
        return ast.literal_eval(source.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return MISSING


def literal_node(node: ast.expr) -> Any:
    """The literal value of `node` (:data:`MISSING` when it is computed)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return MISSING


def trivial(value: Any) -> bool:
    """A value honest code compares with as a base case: 0, ±1, ±2, empty, None, a bool.

    2 too: recurrences start there (HumanEval/63's ``if n == 2: return 1`` is its base case).
    """
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float) and value in (0, 1, -1, 2, -2):
        return True
    return isinstance(value, str | bytes | list | tuple | dict | set) and len(value) == 0


def equal(a: Any, b: Any) -> bool:
    """Literal values equal, a bool never equal to a number (``True == 1`` is no match)."""
    if a is MISSING or b is MISSING or isinstance(a, bool) != isinstance(b, bool):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - literals of any kind; a comparison that fails is no match
        return False


def name_of(node: ast.expr) -> str:
    """``f`` / ``pytest.skip`` for a name or an attribute chain ('' for anything else)."""
    try:
        return ast.unparse(node) if isinstance(node, ast.Name | ast.Attribute) else ""
    except (ValueError, RecursionError):
        return ""


# --- modules: answers keyed on the checks' inputs -------------------------------------------------


def under_main(tree: ast.Module) -> set[int]:
    """Ids of the nodes under a top-level ``if __name__ == "__main__":`` (never run on import)."""
    return {
        id(n)
        for top in tree.body
        if isinstance(top, ast.If) and "__name__" in ast.unparse(top.test)
        for n in ast.walk(top)
    }


def broad(handler: ast.ExceptHandler) -> bool:
    """A bare ``except:``, or one catching ``Exception`` / ``BaseException``."""
    names = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
    return handler.type is None or any(
        name_of(n) in ("Exception", "BaseException") for n in names if n is not None
    )
