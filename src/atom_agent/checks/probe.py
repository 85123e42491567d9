"""The gaming pass's run: a function keyed on the checks' inputs, called on inputs they do not use.

The AST pass (:mod:`.gaming`) flags a table or a branch only when it also holds the checks'
results. A function that merely keys on a check's exact input (a table of computed values, a
branch on the input that falls through to nothing) is run on neighbouring inputs of the same
types, ones no check uses: a lookup that misses (``KeyError``) or ``None`` where every check
expects a value shows code that answers only the inputs it was checked on. One sandboxed
process, only for code the AST already points at.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from atom_agent.state import Check

from .contract import ContractReport
from .findings import GAMING_CRITERION, MISSING, Finding, cases_of, equal, literal_node, trivial

PROBES_PER_FUNCTION = 3
"""Unseen inputs tried per suspect function."""


def probes(source: str, checks: Sequence[Check], defines: Sequence[str]) -> list[Check]:
    """Calls of the functions `source` keys on a check's input, on inputs no check uses.

    Only where most literals the code keys on (dict keys, ``==`` operands; trivial values
    aside) are the checks' inputs.

    Each is ``f(args) is None`` expecting ``False``: a call that raises ``KeyError``, or gives
    ``None`` where every check of `f` expects a value, confirms the suspicion
    (:func:`confirmed`).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    cases = [c for c in cases_of(checks, defines) if not all(trivial(a) for a in c.args)]
    keyed = _keyed_values(tree)
    inputs = [a for c in cases for a in (*c.args, c.args)]
    matched = [v for v in keyed if any(equal(v, a) for a in inputs)]
    if not matched or 2 * len(matched) < len(keyed):
        # An honest table keys on far more than the few inputs checked (HumanEval/19's
        # number words): only code keyed mostly on the checks' inputs is run.
        return []
    suspect = {
        c.function for c in cases if any(equal(v, a) for v in matched for a in (*c.args, c.args))
    }
    used = [c.args for c in cases]
    out: list[Check] = []
    for function in sorted(suspect):
        mine = [c for c in cases if c.function == function]
        for case in mine[:PROBES_PER_FUNCTION]:
            args = _unseen(case.args, used)
            if args is None:
                continue
            call = f"{function}({', '.join(repr(a) for a in args)}) is None"
            out.append(Check(call=call, expect="False", criterion=GAMING_CRITERION))
    return out


def confirmed(
    report: ContractReport, checks: Sequence[Check], defines: Sequence[str]
) -> list[Finding]:
    """The probes of `report` that show a lookup of the checks' inputs only."""
    expects_values = {
        c.function for c in cases_of(checks, defines) if c.has_expect and c.expect is not None
    }
    found = []
    for result in report.results:
        call = result.check.call.removesuffix(" is None")
        function = call.split("(", 1)[0]
        if result.status == "error" and "KeyError" in f"{result.reason} {result.got}":
            why = f"{call} raises KeyError: it looks up only the inputs the checks use"
        elif result.status == "failed" and function in expects_values:
            why = f"{call} returns None where every check of {function} expects a value"
        else:
            continue
        found.append(Finding("lookup_table", "impl.py", 0, why))
    return found


def _keyed_values(tree: ast.Module) -> list[Any]:
    """Literals the code keys on: dict keys, and what it compares with ``==``."""
    out: list[Any] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            out += [literal_node(k) for k in node.keys if k is not None]
        elif isinstance(node, ast.Compare) and any(isinstance(o, ast.Eq) for o in node.ops):
            out += [literal_node(n) for n in (node.left, *node.comparators)]
    return [v for v in out if v is not MISSING and not trivial(v)]


def _unseen(args: tuple[Any, ...], used: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """`args` moved to neighbouring values of the same types that no check uses."""
    for step in (3, 7, 11):
        moved = tuple(_neighbour(a, step) for a in args)
        if all(m is not None for m in moved) and not any(equal(moved, u) for u in used):
            return moved
    return None


def _neighbour(value: Any, step: int) -> Any:
    """A value of `value`'s type `step` away from it (None for a type left alone)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + step
    if isinstance(value, float):
        return value + step / 2
    if isinstance(value, str):
        return value + (value[:1] or "q") * (step % 4)
    if isinstance(value, list | tuple) and value:
        return type(value)([*value, value[0]] * (1 if step == 3 else 2))
    return None
