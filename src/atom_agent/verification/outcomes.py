"""What a task says a call gives or raises on a new object or one stated input, as checks.

A clause says what a call gives about something a new object does not hold (an unknown key,
nothing to pop, a member with no loans), what one stated value gives ("a count of 0 yields an
empty list"), that an attribute is read-only, or that the input is left unchanged.
The phrasings code reads are the ``fresh``, ``given``, ``read-only`` and ``unchanged`` rows of
:data:`~atom_agent.verification.rules.RULES`. The state such a clause describes is the state
of an object just built from its stated construction. Code builds the call (values no
constructor argument can hold for what must be unknown, the stated defaults for the rest) and
checks the stated result; no model is involved, so the check is the task's.

Only what is read with certainty becomes a check: a stated signature, one subject (named in the
clause, by its gerund, or by the clause before it in the same sentence), a literal result or
one exception next to the condition, every other parameter with a stated default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from atom_agent.state import Check
from atom_agent.verification.conditions import (
    EXCEPTION_NAME,
    Stated,
    base_arguments,
    call_source,
    construction,
    owners_of,
)
from atom_agent.verification.rules import (
    FRESH,
    LIT,
    OUTCOME_CRITERION,
    Fired,
    finditer,
    literal,
    rule,
    rules_of,
    search,
    unique,
)

__all__ = ["OUTCOME_CRITERION", "outcome_checks", "subjects"]

_UNKNOWN = {"str": "'zzz'", "int": "987654"}
"""Values of a parameter that must be unknown: no placeholder of a constructor holds them."""


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
) -> list[Fired]:
    """Checks of what clause `text` says a call gives or raises on a new object or input.

    Args:
        text: one clause of the task.
        stated: the task's stated signatures by qualified name (``f``, ``C``, ``C.m``).
        examples: for a function, the argument sources of a worked example (a valid call).
        constructible: classes whose construction the task states (methods get checks).
        previous: the clause before it when both are parts of one sentence (its subject
            carries over: "rename(…) changes a key …; an unknown key raises KeyError").
    """
    callables = [q for q in subjects(text, stated) if q in stated]
    if not callables and previous:
        callables = subjects(previous, stated)
    fired = _fresh(text, stated, constructible, callables)
    fired += _given(text, stated, examples, constructible, callables)
    fired += _read_only(text, stated, constructible)
    fired += _input_unchanged(text, stated, examples, callables)
    return unique(fired)


def _fresh(
    text: str, stated: Mapping[str, Stated], constructible: Sequence[str], callables: list[str]
) -> list[Fired]:
    methods = [q for q in callables if stated[q].owner]
    if len(methods) != 1 or stated[methods[0]].owner not in constructible:
        return []
    sig = stated[methods[0]]
    found = [
        (row.name, match)
        for row in rules_of("fresh")
        for fresh in (FRESH if "{FRESH}" in row.pattern else FRESH[:1])
        for match in finditer(row, text, FRESH=fresh, NOUN=r"(?P<noun>[a-z_]+)", LIT=LIT)[:1]
    ]
    fired: list[Fired] = []
    for name, match in found:
        noun = match.groupdict().get("noun") or ""
        arguments = _unknown_arguments(sig, noun)
        call = call_source(sig, arguments, stated) if arguments is not None else None
        if call is None:
            continue
        if match.groupdict().get("lit"):
            expect = literal(match["lit"])
            check = Check(call=call, expect=expect, criterion=OUTCOME_CRITERION, origin="task")
            fired.append(Fired((name,), check))
        elif match["exc"] in EXCEPTION_NAME.findall(text):
            check = Check(call=call, raises=match["exc"], criterion=OUTCOME_CRITERION,
                          origin="task")  # fmt: skip
            fired.append(Fired((name,), check))
    return fired


def _unknown_arguments(sig: Stated, noun: str) -> dict[str, str] | None:
    """Arguments for a call about something the object does not hold (None: none safe).

    The parameter named like the clause's noun gets a value nothing holds; the others keep
    their defaults. A parameter with neither makes no check: a placeholder could be invalid
    and raise for another reason.
    """
    noun = noun.lower()
    singular = noun[:-1] if noun.endswith("s") else noun
    like = [
        p
        for p in sig.params
        if singular
        and (p in (noun, singular) or p.endswith(f"_{singular}") or p.startswith(f"{singular}_"))
    ]
    required = [p for p, d in zip(sig.params, sig.defaults, strict=True) if d is None]
    if noun and not like and len(required) == 1:
        like = required  # "a colour it does not know" of hex_of(colour): its one argument
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
) -> list[Fired]:
    """One stated value gives a stated result.

    'a limit of 0 gives []', 'empty names give ""', 'An empty list gives an empty list'.
    """
    fired: list[Fired] = []
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
            for match in finditer(rule("param_value_gives"), text, P=re.escape(p), LIT=LIT):
                given = literal(match["value"])
                if given != base[p] and _fits(given, sig.annotations[i]):
                    check = _value_check(sig, {**base, p: given}, match["lit"], stated)
                    fired.append(Fired(("param_value_gives",), check))
            described = rule("param_empty_gives")
            for match in finditer(described, text, P=rf"{re.escape(p)}s?", LIT=LIT):
                value = described.value
                empty = value(match, sig.annotations[i], base[p], base) if value else None
                if empty is not None and empty != base[p]:
                    check = _value_check(sig, {**base, p: empty}, match["lit"], stated)
                    fired.append(Fired((described.name,), check))
        said = search("empty_input_gives", text, LIT=LIT)
        if said is None or not (callables == [qualified] or len(stated) == 1):
            continue
        kind, empty = ("list", "[]") if said["word"].lower() == "list" else ("str", "''")
        typed = [p for p, a in zip(sig.params, sig.annotations, strict=True)
                 if a.replace(" ", "").startswith(kind)]  # fmt: skip
        if len(typed) == 1 and base[typed[0]] != empty:
            check = _value_check(sig, {**base, typed[0]: empty}, said["lit"], stated)
            fired.append(Fired(("empty_input_gives",), check))
    return [f for f in fired if f.check.call]


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
    sig: Stated, arguments: Mapping[str, str], result: str, stated: Mapping[str, Stated]
) -> Check:
    call = call_source(sig, arguments, stated) or ""
    return Check(call=call, expect=literal(result), criterion=OUTCOME_CRITERION, origin="task")


def _read_only(
    text: str, stated: Mapping[str, Stated], constructible: Sequence[str]
) -> list[Fired]:
    """'exposed as a read-only property named size': assigning it raises AttributeError."""
    match = search("read_only_property", text)
    if match is None:
        return []
    named = [c for c in constructible if re.search(rf"\b{re.escape(c)}\b", text)]
    owners = named or (list(constructible) if len(constructible) == 1 else [])
    if len(owners) != 1 or (built := construction(owners[0], stated)) is None:
        return []
    attribute = match["a"] or match["b"]
    check = Check(
        call=f"obj = {built}\nsetattr(obj, {attribute!r}, obj.{attribute})",
        raises="AttributeError",
        criterion=OUTCOME_CRITERION,
        origin="task",
    )
    return [Fired(("read_only_property",), check)]


def _input_unchanged(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    callables: list[str],
) -> list[Fired]:
    """'leaves the input list unchanged': the worked example's list is equal after the call."""
    if search("input_unchanged", text) is None:
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
    check = Check(call=call, expect=given, criterion=OUTCOME_CRITERION, origin="task")
    return [Fired(("input_unchanged",), check)]
