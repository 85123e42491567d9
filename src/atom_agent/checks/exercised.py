"""Which of a step's names an executed check or a passing test actually used (pure, no I/O).

A step can pass with a name nothing ever ran: a contract that only calls one of two functions,
a check that only asserts an error, tests that import a name and never call it. Its criteria
may all read *verified*, yet that name's behaviour was never executed. This module says so per
name, from what ran: the contract's checks that executed and held (value checks and error
checks apart) and, when the step's own tests all passed, the test functions of ``test.py``.
It labels; it decides nothing (the reflector's commit rule is unchanged).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

from atom_agent.checks.contract import ContractReport


@dataclass(frozen=True)
class NameUse:
    """What executed one name a step defines."""

    name: str
    value_checks: int
    """Contract checks that ran, held, and compare a result (``call == expect``)."""
    error_checks: int
    """Contract checks that ran and held, asserting an exception only (``call raises E``)."""
    tests: int
    """Test functions of ``test.py`` that use it, counted only when every test passed."""

    @property
    def status(self) -> str:
        """``exercised``, ``errors only`` (no check of a result), or ``unexercised``."""
        if self.value_checks or self.tests:
            return "exercised"
        return "errors only" if self.error_checks else "unexercised"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (for verdict.json)."""
        return {**asdict(self), "status": self.status}


def referenced_names(source: str) -> set[str]:
    """Names `source` uses: plain names and attributes (``impl.f``), import aliases resolved."""
    tree = _parse(source)
    return set() if tree is None else _used(tree, _aliases(tree))


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """``from m import f as g`` → {"g": "f"}."""
    return {
        alias.asname: alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname
    }


def _used(tree: ast.AST, aliases: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(aliases.get(node.id, node.id))
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def _tests_used(source: str) -> list[set[str]]:
    """The names each test function (``test_*``, also inside ``Test*`` classes) uses."""
    tree = _parse(source)
    if tree is None:
        return []
    aliases = _aliases(tree)
    return [
        _used(node, aliases)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]


def name_uses(
    names: Sequence[str],
    contract: ContractReport | None,
    *,
    ignore: Collection[int] = (),
    tests_source: str = "",
    tests_passed: bool = False,
) -> list[NameUse]:
    """For each of `names`, the executed checks and passing tests that used it.

    `ignore`: contract checks not to count (suspect ones). Tests count only when
    `tests_passed` (a failing suite proves nothing about the names its tests use).
    """
    held: list[tuple[set[str], bool]] = []
    if contract is not None:
        for i, result in enumerate(contract.results):
            if i in ignore or not result.executed or result.status != "passed":
                continue
            held.append((referenced_names(result.check.call), not result.check.raises))
    tests = _tests_used(tests_source) if tests_passed else []
    return [
        NameUse(
            name,
            value_checks=sum(1 for used, value in held if value and name in used),
            error_checks=sum(1 for used, value in held if not value and name in used),
            tests=sum(1 for used in tests if name in used),
        )
        for name in names
    ]


def not_exercised(uses: Iterable[Mapping[str, object]]) -> list[str]:
    """``f (unexercised)`` / ``g (errors only)`` for the names no result-checking run used.

    Takes :meth:`NameUse.to_dict` values (as verdict.json keeps them).
    """
    return [f"{u.get('name')} ({u.get('status')})" for u in uses if u.get("status") != "exercised"]
