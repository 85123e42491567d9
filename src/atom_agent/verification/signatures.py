"""Signatures a task writes out, and the ``inspect.signature`` checks of them.

``resize(width: int, height: int, keep_ratio: bool = True) -> Image`` states parameter names,
defaults and types: the ``stated_signature`` row of
:data:`~atom_agent.verification.rules.RULES`. What parses as a ``def`` header is a signature;
a call with literal arguments (``resize(640, 480)``) is an example.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from atom_agent.checks.contract import SIGNATURE_CRITERION
from atom_agent.checks.extract import in_call
from atom_agent.names import closing_paren, has_literal_args, owner_class
from atom_agent.state import Check
from atom_agent.verification.rules import rule

__all__ = ["Signature", "closing_paren", "signature_checks", "stated_signatures"]

_SIGNATURE_HEAD = re.compile(rule("stated_signature").pattern)
_RETURN = re.compile(r"\s*->\s*([A-Za-z_][\w\[\], |]*)")


@dataclass(frozen=True)
class Signature:
    """A signature the task states: the name, its owner class (if a method), the parameters."""

    name: str
    owner: str
    params: tuple[tuple[str, str | None], ...]
    """(name, repr of the default or None) per parameter, ``self`` left out."""
    annotations: tuple[str, ...] = ()
    """Each parameter's annotation as written ('' where none)."""


def stated_signatures(
    task: str, text: str, start: int, names: Sequence[str], classes: Sequence[str]
) -> list[Signature]:
    """The signatures written out in clause `text` (at offset `start` of `task`).

    ``name(params)`` that parses as a ``def`` header, is not nested in another call, and either
    annotates or defaults a parameter or is the name's first mention in the task (where a task
    introduces what it asks for). A lowercase name after a class's mention, not called a
    function of its own, is that class's method.
    """
    found: list[Signature] = []
    for match in _SIGNATURE_HEAD.finditer(text):
        name = match.group(1)
        close = closing_paren(text, match.end() - 1)
        if close is None or name not in names or in_call(text, match.start()):
            continue
        inner = text[match.end() : close]
        returns = _RETURN.match(text[close + 1 :])  # says it is a signature; never compared
        header = f"def {name}({inner})"
        try:
            node = ast.parse(header + ": pass").body[0]
        except (SyntaxError, ValueError):
            continue
        if not isinstance(node, ast.FunctionDef) or has_literal_args(inner):
            continue
        args = node.args
        typed = any(a.annotation is not None for a in args.args) or bool(args.defaults)
        at = start + match.start()
        first = _first_mention(task, name) >= at - 1
        if not (typed or returns or first):
            continue
        params = _params(node)
        if params is None:
            continue
        owner = owner_class(task, at, name, list(classes))
        annotations = tuple(
            ast.unparse(a.annotation) if a.annotation is not None else ""
            for a in args.args
            if a.arg not in ("self", "cls")
        )
        found.append(Signature(name, owner, params, annotations))
    return found


def signature_checks(
    task: str, text: str, start: int, names: Sequence[str], classes: Sequence[str]
) -> list[Check]:
    """One ``inspect.signature`` check per stated signature of clause `text`."""
    checks = []
    for sig in stated_signatures(task, text, start, names, classes):
        target = f"{sig.owner}.{sig.name}" if sig.owner else sig.name
        call = (
            "import inspect\n"
            f"[(p.name, None if p.default is p.empty else repr(p.default)) for p in "
            f"inspect.signature({target}).parameters.values() if p.name not in ('self', 'cls')]"
        )
        expect = repr([tuple(p) for p in sig.params])
        checks.append(Check(call=call, expect=expect, criterion=SIGNATURE_CRITERION, origin="task"))
    return checks


def _params(node: ast.FunctionDef) -> tuple[tuple[str, str | None], ...] | None:
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None  # keyword-only and star parameters: too many equivalent spellings
    positional = [a.arg for a in args.args if a.arg not in ("self", "cls")]
    defaults: list[str | None] = [None] * (len(args.args) - len(args.defaults))
    for default in args.defaults:
        try:
            defaults.append(repr(ast.literal_eval(default)))
        except (ValueError, SyntaxError):
            return None  # a default code cannot evaluate: do not guess its repr
    kept = [d for a, d in zip(args.args, defaults, strict=True) if a.arg not in ("self", "cls")]
    return tuple(zip(positional, kept, strict=True))


def _first_mention(task: str, name: str) -> int:
    match = re.search(rf"(?<![\w.]){re.escape(name)}\b", task)
    return match.start() if match else len(task)
