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
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

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
        return {
            "name": self.name,
            "status": self.status,
            "value_checks": self.value_checks,
            "error_checks": self.error_checks,
            "tests": self.tests,
        }


def referenced_names(source: str) -> set[str]:
    """Names `source` uses: plain names and attributes (``impl.f``), import aliases resolved."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(aliases.get(node.id, node.id))
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def _test_functions(source: str) -> list[str]:
    """The source of each test function (``test_*``, also inside ``Test*`` classes)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    imports = "\n".join(
        ast.unparse(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)
    )
    bodies: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            bodies.append(imports + "\n" + ast.unparse(node))
    return bodies


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
    tests: Iterable[set[str]] = (
        [referenced_names(body) for body in _test_functions(tests_source)] if tests_passed else []
    )
    tests = list(tests)
    return [
        NameUse(
            name,
            value_checks=sum(1 for used, value in held if value and name in used),
            error_checks=sum(1 for used, value in held if not value and name in used),
            tests=sum(1 for used in tests if name in used),
        )
        for name in names
    ]


def not_exercised(uses: Iterable[NameUse]) -> list[str]:
    """``f (unexercised)`` / ``g (errors only)`` for the names no result-checking run used."""
    return [f"{u.name} ({u.status})" for u in uses if u.status != "exercised"]
