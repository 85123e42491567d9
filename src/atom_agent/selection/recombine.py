"""Recombination: the best candidate with one function taken from another, chosen by execution.

Candidates sampled from one model for a class or a module of several functions are often each
right in different places: the plain answer's ``undo`` is right and its ``text`` property wrong,
a warm sample the other way round. Whole-file selection keeps one of them and loses what the
other got right; a small model asked to repair rarely fixes it (the devtasks repairs). ClassEval
(Du et al., 2023) found weaker models do better method by method; CodeT and AlphaCode choose
among samples by execution. Recombination does both with no model call: it takes the function a
failing check exercises from a candidate that passes that check, splices it into the best
candidate, and keeps the result only when it executes strictly better on the same checks.

A method that reads instance state the best candidate's class never sets is tried together with
the donor's ``__init__``; the helper functions and methods the function calls that the best
candidate lacks come with it. Every trial is executed; none is believed.
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from atom_agent.checks.contract import CheckResult, ContractReport

from .rank import rank
from .splice import COMPARISONS, OPERATORS, functions_of, pointed_at, splice

MAX_TRIALS = 12
"""Spliced modules executed per recombination (each is one contract run in the sandbox)."""

_FAILED = ("failed", "error", "timeout")
_DUNDER_OF: dict[type[ast.AST], str] = {
    **OPERATORS,
    **COMPARISONS,
    ast.NotEq: "__ne__",
    ast.LtE: "__le__",
    ast.Gt: "__gt__",
    ast.GtE: "__ge__",
    ast.NotIn: "__contains__",
}
"""The dunder an operator dispatches to (the splice's own table, and the other comparisons)."""
_BUILTIN_DUNDERS = {"len": "__len__", "str": "__str__", "repr": "__repr__", "iter": "__iter__",
                    "bool": "__bool__", "hash": "__hash__"}  # fmt: skip


@dataclass(frozen=True)
class Scored:
    """A module and what the checks said of it."""

    source: str
    report: ContractReport


Run = Callable[[str], ContractReport | None]
"""Runs the same checks on a module (None: it could not be run)."""


def exercised(result: CheckResult, functions: Collection[str]) -> list[str]:
    """The functions and methods of the module `result`'s check exercises, likeliest first.

    Where it raised, then the one its value comes from
    (:func:`~atom_agent.selection.splice.pointed_at`),
    then every other one its expression names: functions called, classes constructed
    (``C.__init__``), methods and properties used (``.insert(``, ``.text``), operators and
    builtins that dispatch to a dunder (``a + b``, ``len(x)``).
    """
    found: list[str] = []

    def add(name: str | None) -> None:
        if name and name in functions and name not in found:
            found.append(name)

    if result.function:
        add(result.function.split(".<locals>")[0])
    add(pointed_at(result, functions))
    try:
        tree = ast.parse(result.check.call.strip())
    except (SyntaxError, ValueError):
        return found
    members: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            add(node.func.id)
            add(f"{node.func.id}.__init__")
            members.append(_BUILTIN_DUNDERS.get(node.func.id, ""))
        elif isinstance(node, ast.Attribute):
            members.append(node.attr)
        elif isinstance(node, ast.BinOp):
            members.append(_DUNDER_OF.get(type(node.op), ""))
        elif isinstance(node, ast.Compare):
            members += [_DUNDER_OF.get(type(op), "") for op in node.ops]
    for member in members:
        for name in functions:
            if member and "." in name and name.rpartition(".")[2] == member:
                add(name)
    return found


def recombine(
    base: Scored,
    donors: Sequence[Scored],
    run: Run,
    *,
    ignore: Collection[int] = (),
    max_trials: int = MAX_TRIALS,
) -> Scored | None:
    """`base` with functions taken from `donors`, when that executes strictly better.

    Greedy: for the function failing checks exercise most, the donors that pass one of those
    checks are tried in turn (most such passes first); a trial that ranks higher on the checks
    (:func:`~atom_agent.selection.rank.rank`, checks in `ignore` counting for nothing) becomes
    the new base and the search goes on from its failures. Reports must come from the same
    checks in the same order. None when no trial ranked higher (or nothing failed).
    """
    current = base
    tried: set[str] = {base.source}
    trials = 0
    improved = False
    while trials < max_trials:
        step = _better(current, donors, run, ignore, tried, max_trials - trials)
        trials += step[1]
        if step[0] is None:
            break
        current, improved = step[0], True
    return current if improved else None


def _better(
    base: Scored,
    donors: Sequence[Scored],
    run: Run,
    ignore: Collection[int],
    tried: set[str],
    budget: int,
) -> tuple[Scored | None, int]:
    """The first trial that ranks above `base`, and how many trials it took."""
    functions = functions_of(base.source)
    failing = [
        i for i, r in enumerate(base.report.results) if i not in ignore and r.status in _FAILED
    ]
    if not functions or not failing:
        return None, 0
    by_target: dict[str, list[int]] = {}
    for i in failing:
        for name in exercised(base.report.results[i], functions):
            by_target.setdefault(name, []).append(i)
    order = Counter({name: len(ix) for name, ix in by_target.items()})
    bar = rank(base.report, ignore=ignore)
    trials = 0
    for target, _ in order.most_common():
        wanted = by_target[target]
        ranked = sorted(
            (d for d in donors if _passes_any(d.report, wanted)),
            key=lambda d: -sum(_passed(d.report, i) for i in wanted),
        )
        for donor in ranked:
            for source in _transplants(base.source, donor.source, target):
                if source in tried:
                    continue
                if trials >= budget:
                    return None, trials
                tried.add(source)
                trials += 1
                report = run(source)
                if report is not None and rank(report, ignore=ignore) > bar:
                    return Scored(source, report), trials
    return None, trials


def _passed(report: ContractReport, i: int) -> bool:
    return i < len(report.results) and report.results[i].status == "passed"


def _passes_any(report: ContractReport, indexes: Sequence[int]) -> bool:
    return any(_passed(report, i) for i in indexes)


def _transplants(source: str, donor: str, target: str) -> list[str]:
    """`source` with `donor`'s `target` (and what it needs), then with its ``__init__`` too.

    The second is tried only when the method reads instance state `source`'s class never sets.
    """
    theirs = functions_of(donor).get(target)
    mine = functions_of(source).get(target)
    if theirs is None or mine is None or ast.dump(theirs) == ast.dump(mine):
        return []
    out: list[str] = []
    first = transplant(source, donor, [target])
    if first is not None:
        out.append(first)
    owner = target.rpartition(".")[0]
    init = f"{owner}.__init__"
    if owner and target != init and init in functions_of(donor):
        missing = _self_reads(theirs) - _self_sets(source, owner)
        if missing:
            both = transplant(source, donor, [init, target])
            if both is not None:
                out.append(both)
    return out


def transplant(source: str, donor: str, targets: Sequence[str]) -> str | None:
    """`source` with each of `targets` replaced by `donor`'s definition of it.

    The donor's helper functions and methods the transplanted code calls that `source` lacks
    come along (module functions at the end, methods at the end of their class), and so do
    its imports. None when a target is missing from either module or the result does not
    parse.
    """
    donor_functions = functions_of(donor)
    lines = donor.splitlines(keepends=True)
    current = source
    for target in targets:
        node = donor_functions.get(target)
        if node is None or target not in functions_of(current):
            return None
        text = textwrap.dedent("".join(lines[_start(node) - 1 : node.end_lineno]))
        spliced = splice(current, target, _imports(donor) + text + _helpers(donor, node, current))
        if spliced is None:
            return None
        current = spliced
        owner = target.rpartition(".")[0]
        if owner:
            current = _with_methods(current, donor, owner, node) or current
    return current


def _start(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([d.lineno for d in node.decorator_list] + [node.lineno])


def _imports(donor: str) -> str:
    tree = ast.parse(donor)
    found = [
        ast.unparse(n) + "\n"
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
    ]
    return "".join(found)


def _called(node: ast.AST) -> tuple[set[str], set[str]]:
    """Names `node` calls (``f(...)``) and methods it calls or reads on ``self``."""
    names: set[str] = set()
    members: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            names.add(sub.func.id)
        elif (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
        ):
            members.add(sub.attr)
    return names, members


def _helpers(donor: str, node: ast.AST, current: str) -> str:
    """The donor's module functions `node` calls that `current` does not define."""
    names, _ = _called(node)
    have = {n for n in functions_of(current) if "." not in n}
    lines = donor.splitlines(keepends=True)
    found = [
        "".join(lines[_start(f) - 1 : f.end_lineno])
        for name, f in functions_of(donor).items()
        if "." not in name and name in names and name not in have
    ]
    return "".join("\n\n" + h for h in found)


def _with_methods(current: str, donor: str, owner: str, node: ast.AST) -> str | None:
    """`current` with the donor's methods of `owner` that `node` uses and `current` lacks."""
    _, members = _called(node)
    have = functions_of(current)
    theirs = functions_of(donor)
    wanted = [
        theirs[f"{owner}.{m}"]
        for m in sorted(members)
        if f"{owner}.{m}" in theirs and f"{owner}.{m}" not in have
    ]
    if not wanted:
        return None
    tree = ast.parse(current)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
    if cls is None or cls.end_lineno is None:
        return None
    donor_lines = donor.splitlines(keepends=True)
    indent = " " * cls.body[0].col_offset
    added = [
        "\n"
        + textwrap.indent(
            textwrap.dedent("".join(donor_lines[_start(f) - 1 : f.end_lineno])),
            indent,
            lambda line: bool(line.strip()),
        )
        for f in wanted
    ]
    lines = current.splitlines(keepends=True)
    if lines[cls.end_lineno - 1] and not lines[cls.end_lineno - 1].endswith("\n"):
        lines[cls.end_lineno - 1] += "\n"
    joined = "".join(lines[: cls.end_lineno] + added + lines[cls.end_lineno :])
    try:
        ast.parse(joined)
    except (SyntaxError, ValueError):
        return None
    return joined


def _self_reads(node: ast.AST) -> set[str]:
    """Attributes `node` reads on ``self`` that are not methods it calls."""
    called = {
        sub.func.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
    }
    return {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
        and isinstance(sub.ctx, ast.Load)
        and sub.attr not in called
    }


def _self_sets(source: str, owner: str) -> set[str]:
    """Attributes the class `owner` of `source` sets on ``self``, and its members' names."""
    tree = ast.parse(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
    if cls is None:
        return set()
    found: set[str] = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    for sub in ast.walk(cls):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
            and isinstance(sub.ctx, ast.Store)
        ):
            found.add(sub.attr)
    return found
