"""Errors a task states as conditions on parameters, each turned into a call that meets one.

"Raise ValueError when weights is empty, when any weight is negative … or when unit is less
than 1", "a negative max_undo raises ValueError", "If start is not less than end, book raises
ValueError", "Malformed input (… empty string) raises ValueError": the task names a
parameter of a stated signature and a condition on it. Code reads the condition, starts from
a call it knows to be valid (a worked example of the task, else the stated defaults and plain
values of the stated types) and changes that one parameter so the condition holds. The check
is that the call raises the clause's exception; no model is involved, so it is the task's.

Only conditions read with certainty become checks: a parameter of a signature the task
states, one exception in the clause, a method only on a class whose construction the task
states (``TextBuffer(text: str = '', …)``, ``Autocomplete()``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from atom_agent.state import Check

ERROR_CRITERION = "the errors the task states are raised"

EXCEPTION_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b")
_NUMBER = r"(-?\d+)"


@dataclass(frozen=True)
class Stated:
    """A callable the task states: ``name`` (``Class`` for a constructor), owner, parameters."""

    name: str
    owner: str
    params: tuple[str, ...]
    annotations: tuple[str, ...]
    defaults: tuple[str | None, ...]
    """Each parameter's default as source, None when it has none."""
    returns: str = ""
    """The result's annotation as written after ``->`` ('' where none)."""


def _placeholder(annotation: str, counter: dict[str, int]) -> str | None:
    """A plain valid value of `annotation` (None: no safe value)."""
    ann = annotation.replace(" ", "")
    if "|None" in ann or ann.startswith("Optional["):
        return "None"
    n = counter[ann] = counter.get(ann, 0) + 1
    if ann == "int":
        return str(n)
    if ann == "float":
        return f"{n}.5"
    if ann == "str":
        return repr(chr(ord("a") + (n - 1) % 26))
    if ann == "bool":
        return "False"
    if re.fullmatch(r"(?:list|List|Sequence)\[int\]", ann):
        return "[1, 2]"
    if re.fullmatch(r"(?:list|List|Sequence)\[str\]", ann):
        return "['a', 'b']"
    if re.fullmatch(r"(?:list|List|Sequence)\[float\]", ann):
        return "[1.5, 2.5]"
    return None


def _empty(annotation: str) -> str | None:
    ann = annotation.replace(" ", "")
    if ann == "str":
        return "''"
    if re.match(r"(?:list|List|Sequence)\b", ann):
        return "[]"
    if re.match(r"(?:dict|Dict|Mapping)\b", ann):
        return "{}"
    return None


def _list_with(base: str, item: str) -> str | None:
    """`base` (a list literal) with its last item replaced by `item`."""
    try:
        value = ast.literal_eval(base)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, list) or not value:
        return None
    return "[" + ", ".join([*(repr(v) for v in value[:-1]), item]) + "]"


def _zeros(base: str) -> str | None:
    try:
        value = ast.literal_eval(base)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, list) or not value:
        return None
    return repr([0] * len(value))


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


Rule = Callable[[re.Match[str], str, str, Mapping[str, str]], str | None]
"""(match, the parameter's annotation, its base value, all base values) → the violating value."""


def _rules(p: str, others: Sequence[str]) -> list[tuple[str, Rule]]:
    """Patterns of a condition on parameter `p` and how each makes a value that meets it."""
    q = "|".join(re.escape(o) for o in others if o != p) or r"(?!x)x"
    one = re.escape(_singular(p))
    return [
        (rf"\b{p} is (?:an? )?empty\b|\bempty {p}\b", lambda m, a, b, v: _empty(a)),
        (
            rf"\b{p} is negative\b|\ba negative {p}\b|\b{p} < 0\b",
            lambda m, a, b, v: "-1" if a == "int" else ("-1.5" if a == "float" else None),
        ),
        (
            rf"\b(?:any|an?|one) {one} is negative\b",
            lambda m, a, b, v: _list_with(b, "-1") if a.startswith(("list", "List")) else None,
        ),
        (rf"\b{p} must be (?:a |an )?non-?empty\b", lambda m, a, b, v: _empty(a)),
        (
            rf"\b{p} must be (?:a |an )?positive\b",
            lambda m, a, b, v: "0" if a in ("int", "float") else None,
        ),
        (
            rf"\b{p} must be (?:a |an )?non-?negative\b",
            lambda m, a, b, v: "-1" if a in ("int", "float") else None,
        ),
        (
            rf"\b{p} must be (?:between|from) {_NUMBER} (?:and|to)\b",
            lambda m, a, b, v: str(int(m.group(1)) - 1) if a == "int" else None,
        ),
        (rf"\ball {p} are (?:0|zero)\b", lambda m, a, b, v: _zeros(b)),
        (rf"\b{p} is (?:0|zero)\b", lambda m, a, b, v: "0" if a == "int" else None),
        (
            rf"\b{p} (?:is )?(?:less than|smaller than|below|<) {_NUMBER}\b",
            lambda m, a, b, v: str(int(m.group(1)) - 1) if a == "int" else None,
        ),
        (
            rf"\b{p} (?:is )?(?:greater than|more than|larger than|above|>) {_NUMBER}\b",
            lambda m, a, b, v: str(int(m.group(1)) + 1) if a == "int" else None,
        ),
        (
            rf"\b{p} is not less than ({q})\b"
            rf"|\b{p} (?:is )?(?:greater than or equal to|>=) ({q})\b",
            lambda m, a, b, v: v.get(m.group(1) or m.group(2) or ""),
        ),
        (
            rf"\b{p} (?:is )?(?:greater than|>) ({q})\b",
            lambda m, a, b, v: _plus_one(v.get(m.group(1), "")),
        ),
    ]


def _plus_one(value: str) -> str | None:
    try:
        number = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return None
    return str(number + 1) if isinstance(number, int) and not isinstance(number, bool) else None


_DESCRIBED = (
    (re.compile(r"\b(?:an? )?empty string\b", re.IGNORECASE), "str", "''"),
    (re.compile(r"\b(?:an? )?empty list\b", re.IGNORECASE), "list", "[]"),
)
"""An input described without a parameter name: the only parameter of its type gets it."""


def condition_checks(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    constructible: Sequence[str],
) -> list[Check]:
    """One check per condition clause `text` states on a parameter of a stated callable.

    Args:
        text: one clause of the task.
        stated: the task's stated signatures by qualified name (``f``, ``C``, ``C.m``).
        examples: for a function, the argument sources of a worked example (a valid call).
        constructible: classes whose construction the task states (methods get checks).
    """
    excs = set(EXCEPTION_NAME.findall(text))
    if len(excs) != 1 or not re.search(r"\brais|\berror\b|\bwhen\b|\bif\b", text, re.I):
        return []
    exc = excs.pop()
    checks: list[Check] = []
    mentioned = [
        q for q, s in stated.items() if re.search(rf"(?<![\w.]){re.escape(s.name)}\b", text)
    ]
    for qualified, sig in stated.items():
        if sig.owner and sig.owner not in constructible:
            continue
        for violation in _violations(text, sig, stated, examples, qualified, mentioned):
            call = call_source(sig, violation, stated)
            if call is not None:
                checks.append(
                    Check(call=call, raises=exc, criterion=ERROR_CRITERION, origin="task")
                )
    return list({c.describe(): c for c in checks}.values())


def owners_of(param: str, stated: Mapping[str, Stated]) -> list[str]:
    """The stated callables with a parameter named `param`."""
    return [q for q, s in stated.items() if param in s.params]


def _violations(
    text: str,
    sig: Stated,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    qualified: str,
    mentioned: Sequence[str],
) -> list[dict[str, str]]:
    """Argument sets (every parameter by name) that each meet one condition of `text`."""
    base = base_arguments(sig, examples.get(qualified, ()))
    if base is None:
        return []
    found: list[dict[str, str]] = []
    for i, p in enumerate(sig.params):
        owners = owners_of(p, stated)
        # The clause's condition is on this callable's parameter: the callable is the one
        # the clause names, or the only one with a parameter of that name.
        if qualified not in mentioned and owners != [qualified]:
            continue
        for rule_pattern, rule in _rules(re.escape(p), sig.params):
            for match in re.finditer(rule_pattern, text):
                value = rule(match, sig.annotations[i], base[p], base)
                if value is not None and value != base[p]:
                    found.append({**base, p: value})
    if not found and (qualified in mentioned or len(stated) == 1):
        for pattern, kind, value in _DESCRIBED:
            of_kind = [p for p, a in zip(sig.params, sig.annotations, strict=True)
                       if a.replace(" ", "").startswith(kind)]  # fmt: skip
            if pattern.search(text) and len(of_kind) == 1 and base[of_kind[0]] != value:
                found.append({**base, of_kind[0]: value})
    return found


def base_arguments(sig: Stated, example: Sequence[str]) -> dict[str, str] | None:
    """A valid call's arguments: the worked example's, else defaults and plain typed values."""
    if example and len(example) <= len(sig.params):
        values = dict(zip(sig.params, example, strict=False))
        for p, default in zip(sig.params, sig.defaults, strict=True):
            if p not in values:
                if default is None:
                    return None
                values[p] = default
        return values
    counter: dict[str, int] = {}
    values = {}
    for p, annotation, default in zip(sig.params, sig.annotations, sig.defaults, strict=True):
        value = default if default is not None else _placeholder(annotation, counter)
        if value is None:
            return None
        values[p] = value
    return values


def call_source(
    sig: Stated, arguments: Mapping[str, str], stated: Mapping[str, Stated]
) -> str | None:
    """The call of `sig` with every parameter by name; a method on a newly built object.

    None when the object cannot be built (its stated construction has no safe arguments).
    """
    args = ", ".join(f"{p}={arguments[p]}" for p in sig.params)
    if not sig.owner:
        return f"{sig.name}({args})"
    built = construction(sig.owner, stated)
    return None if built is None else f"obj = {built}\nobj.{sig.name}({args})"


def construction(owner: str, stated: Mapping[str, Stated]) -> str | None:
    """``C(…)`` from the class's stated construction: its defaults and plain typed values."""
    ctor = stated.get(owner)
    if ctor is None:
        return f"{owner}()"
    base = base_arguments(ctor, ())
    if base is None:
        return None
    return f"{owner}({', '.join(f'{p}={base[p]}' for p in ctor.params)})"
