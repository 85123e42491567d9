"""What a task says a call gives or raises on a new object or one stated input, as checks.

"undo() … returns False when there is nothing to undo", "weight_of(word: str) -> int returns
a word's total, or 0 for a word it does not know", "removing a word it does not know raises
KeyError", "an id that does not exist … raises KeyError", "(a room with no bookings gives [])",
"limit 0 gives an empty list", "An empty list gives an empty list". The state such a clause
describes is the state of an object just built from its stated construction: it knows no word,
holds no edit, has no booking. Code builds the call (values no constructor argument can hold
for what must be unknown, the stated defaults for the rest) and checks the stated result; no
model is involved, so the check is the task's.

Only what is read with certainty becomes a check: a stated signature, one subject (named in the
clause, by its gerund, or by the clause before it in the same sentence), a literal result or
one exception next to the condition, every other parameter with a stated default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from atom_agent.state import Check

from .conditions import (
    EXCEPTION_NAME,
    Stated,
    base_arguments,
    call_source,
    construction,
    owners_of,
)

OUTCOME_CRITERION = "what the task states a call gives or raises holds"

_UNKNOWN = {"str": "'zzz'", "int": "987654"}
"""Values of a parameter that must be unknown: no placeholder of a constructor holds them."""

_LIT = (
    r"\[\]|\{\}|\(\)|''|\"\"|True|False|None|-?\d+(?:\.\d+)?|zero"
    r"|an empty (?:list|string|dict|tuple)"
)
_LITERAL = rf"(?P<lit>{_LIT})"
_LITERALS = {
    "zero": "0",
    '""': "''",
    "an empty list": "[]",
    "an empty string": "''",
    "an empty dict": "{}",
    "an empty tuple": "()",
}

_NOUN = r"(?P<noun>[a-z_]+)"
_FRESH = (
    rf"an? {_NOUN} (?:that )?it does not know",
    rf"an? {_NOUN} that (?:does not|doesn't) exist",
    rf"an? (?:unknown|missing|nonexistent|non-existent) {_NOUN}",
    rf"an? {_NOUN} with no [a-z_]+",
    r"there is nothing to [a-z_]+",
)
"""States a new object is in: it knows nothing, holds nothing (the noun names the unknown)."""

_FORMS = (
    # "returns False when there is nothing to undo", "or 0 for a word it does not know"
    ("value", r"\b(?:returns|gives|is|or) {lit} (?:when|if|for) {fresh}\b"),
    # "a room with no bookings gives []"
    ("value", r"\b{fresh}\)? (?:gives|returns) {lit}"),
    # "removing a word it does not know raises KeyError", "an unknown column raises KeyError"
    ("raises", r"\b{fresh}(?: [a-z ]{{0,30}})? raises? (?P<exc>[A-Z]\w*)"),
)
_EXISTING = re.compile(
    r"\bfor an? (?:current|known|existing) (?P<noun>[a-z_]+) and raises (?P<exc>[A-Z]\w*) otherwise"
)
"""'returns (room, …) for a current booking and raises KeyError otherwise'."""


def _literal(text: str) -> str:
    return _LITERALS.get(text, text)


def subjects(text: str, stated: Mapping[str, Stated]) -> list[str]:
    """The stated callables `text` names as ``name(``, else methods by gerund (removing)."""
    named = [
        q for q, sig in stated.items() if re.search(rf"(?<![\w.]){re.escape(sig.name)}\s*\(", text)
    ]
    if named:
        return named
    gerunds = set(re.findall(r"\b([a-z]+)ing\b", text))
    return [
        q
        for q, sig in stated.items()
        if sig.owner and any(sig.name in (g, g + "e", g[:-1]) for g in gerunds)
    ]


def outcome_checks(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    constructible: Sequence[str],
    previous: str = "",
) -> list[Check]:
    """Checks of what clause `text` says a call gives or raises on a new object or input.

    Args:
        text: one clause of the task.
        stated: the task's stated signatures by qualified name (``f``, ``C``, ``C.m``).
        examples: for a function, the argument sources of a worked example (a valid call).
        constructible: classes whose construction the task states (methods get checks).
        previous: the clause before it when both are parts of one sentence (its subject
            carries over: "sort_by(…) reorders the rows …; an unknown column raises KeyError").
    """
    callables = [q for q in subjects(text, stated) if q in stated]
    if not callables and previous:
        callables = subjects(previous, stated)
    checks = _fresh(text, stated, constructible, callables)
    checks += _given(text, stated, examples, constructible, callables)
    checks += _read_only(text, stated, constructible)
    checks += _input_unchanged(text, stated, examples, callables)
    return list({c.describe(): c for c in checks}.values())


def _fresh(
    text: str, stated: Mapping[str, Stated], constructible: Sequence[str], callables: list[str]
) -> list[Check]:
    methods = [q for q in callables if stated[q].owner]
    if len(methods) != 1 or stated[methods[0]].owner not in constructible:
        return []
    sig = stated[methods[0]]
    checks: list[Check] = []
    found = [
        (kind, match)
        for kind, form in _FORMS
        for fresh in _FRESH
        if (match := re.search(form.format(lit=_LITERAL, fresh=fresh), text))
    ]
    if (existing := _EXISTING.search(text)) is not None:
        found.append(("raises", existing))
    for kind, match in found:
        noun = match.groupdict().get("noun") or ""
        arguments = _unknown_arguments(sig, noun)
        call = call_source(sig, arguments, stated) if arguments is not None else None
        if call is None:
            continue
        if kind == "value":
            checks.append(
                Check(
                    call=call,
                    expect=_literal(match["lit"]),
                    criterion=OUTCOME_CRITERION,
                    origin="task",
                )  # fmt: skip
            )
        elif match["exc"] in EXCEPTION_NAME.findall(text):
            checks.append(
                Check(call=call, raises=match["exc"], criterion=OUTCOME_CRITERION, origin="task")
            )
    return checks


def _unknown_arguments(sig: Stated, noun: str) -> dict[str, str] | None:
    """Arguments for a call about something the object does not hold (None: none safe).

    The parameter named like the clause's noun gets a value nothing holds; the others keep
    their defaults. A parameter with neither makes no check: a placeholder could be invalid
    and raise for another reason.
    """
    singular = noun[:-1] if noun.endswith("s") else noun
    like = [
        p
        for p in sig.params
        if singular
        and (p in (noun, singular) or p.endswith(f"_{singular}") or p.startswith(f"{singular}_"))
    ]
    required = [p for p, d in zip(sig.params, sig.defaults, strict=True) if d is None]
    if noun and not like and len(required) == 1:
        like = required  # "a book it does not know" of copies_of(isbn): its one argument
    arguments: dict[str, str] = {}
    for p, annotation, default in zip(sig.params, sig.annotations, sig.defaults, strict=True):
        named = p in like
        if not named:
            if default is None:
                return None
            arguments[p] = default
            continue
        value = _UNKNOWN.get(annotation.replace(" ", "").removesuffix("|None"))
        if value is None:
            return None
        arguments[p] = value
    return arguments


def _given(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    constructible: Sequence[str],
    callables: list[str],
) -> list[Check]:
    """One stated value gives a stated result: 'limit 0 gives an empty list', 'An empty list …'."""
    checks: list[Check] = []
    for qualified, sig in stated.items():
        if sig.owner and sig.owner not in constructible:
            continue
        base = base_arguments(sig, examples.get(qualified, ()))
        if base is None:
            continue
        for i, p in enumerate(sig.params):
            owners = owners_of(p, stated)
            if qualified not in callables and owners != [qualified]:
                continue
            pattern = (
                rf"\b{re.escape(p)} (?:of |is |= ?)?(?P<value>{_LIT}) (?:gives|returns) {_LITERAL}"
            )
            for match in re.finditer(pattern, text):
                given = _literal(match["value"])
                if given != base[p] and _fits(given, sig.annotations[i]):
                    checks.append(_value_check(sig, {**base, p: given}, match["lit"], stated))
        of_type = {"list": "[]", "str": "''"}
        for kind, empty in of_type.items():
            typed = [
                p
                for p, a in zip(sig.params, sig.annotations, strict=True)
                if a.replace(" ", "").startswith(kind)
            ]
            word = "list" if kind == "list" else "string"
            found = re.search(rf"\b(?:an? )?empty {word} (?:gives|returns) {_LITERAL}", text, re.I)
            if found and len(typed) == 1 and (callables == [qualified] or len(stated) == 1):
                if base[typed[0]] != empty:
                    checks.append(
                        _value_check(sig, {**base, typed[0]: empty}, found["lit"], stated)
                    )
    return [c for c in checks if c.call]


def _fits(value: str, annotation: str) -> bool:
    ann = annotation.replace(" ", "")
    if re.fullmatch(r"-?\d+", value):
        return ann in ("int", "float") or ann.startswith(("int|", "float|"))
    if value in ("[]", "()"):
        return ann.startswith(("list", "List", "Sequence", "tuple"))
    if value == "''":
        return ann.startswith("str")
    return False


def _value_check(
    sig: Stated, arguments: Mapping[str, str], literal: str, stated: Mapping[str, Stated]
) -> Check:
    call = call_source(sig, arguments, stated) or ""
    return Check(call=call, expect=_literal(literal), criterion=OUTCOME_CRITERION, origin="task")


_READ_ONLY = re.compile(
    r"\bread-only (?:property|attribute) (?:named |called )?`?(?P<a>[a-z_]\w*)`?"
    r"|\b`?(?P<b>[a-z_]\w*)`? is a read-only (?:property|attribute)"
)


def _read_only(
    text: str, stated: Mapping[str, Stated], constructible: Sequence[str]
) -> list[Check]:
    """'exposed as a read-only property named text': assigning it raises AttributeError."""
    match = _READ_ONLY.search(text)
    if match is None:
        return []
    named = [c for c in constructible if re.search(rf"\b{re.escape(c)}\b", text)]
    owners = named or (list(constructible) if len(constructible) == 1 else [])
    if len(owners) != 1 or (built := construction(owners[0], stated)) is None:
        return []
    attribute = match["a"] or match["b"]
    return [
        Check(
            call=f"obj = {built}\nsetattr(obj, {attribute!r}, obj.{attribute})",
            raises="AttributeError",
            criterion=OUTCOME_CRITERION,
            origin="task",
        )  # fmt: skip
    ]


_UNCHANGED = re.compile(
    r"\b(?:leaves|keeps) (?:the|its) (?:input|argument)s?(?: \w+)? unchanged"
    r"|\bdoes not (?:modify|mutate|change) (?:the|its) (?:input|argument)",
    re.IGNORECASE,
)


def _input_unchanged(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    callables: list[str],
) -> list[Check]:
    """'leaves the input list unchanged': the worked example's list is equal after the call."""
    if _UNCHANGED.search(text) is None:
        return []
    functions = [q for q in stated if not stated[q].owner]
    subject = [q for q in callables if q in functions] or (functions if len(functions) == 1 else [])
    if len(subject) != 1 or not examples.get(subject[0]):
        return []
    arguments = list(examples[subject[0]])
    mutable = [i for i, a in enumerate(arguments) if a.startswith(("[", "{"))]
    if len(mutable) != 1:
        return []
    given = arguments[mutable[0]]
    arguments[mutable[0]] = "given"
    call = f"given = {given}\n{stated[subject[0]].name}({', '.join(arguments)})\ngiven"
    return [Check(call=call, expect=given, criterion=OUTCOME_CRITERION, origin="task")]
