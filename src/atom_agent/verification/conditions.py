"""Errors a task states as conditions on parameters, each turned into a call that meets one.

A clause names a parameter of a stated signature, a condition on it and one exception: "a
negative count raises ValueError", "size has to be at least 2, otherwise … raises ValueError",
"an empty input must fail with ValueError". The conditions code reads are the ``condition``
and ``described`` rows of :data:`~atom_agent.verification.rules.RULES`. Code starts from a call
it knows to be valid (a worked example of the task, else the stated defaults and plain values
of the stated types) and changes that one parameter so the condition holds. The check is that
the call raises the clause's exception; no model is involved, so it is the task's.

Only conditions read with certainty become checks: a parameter of a signature the task
states, one exception in the clause, a method only on a class whose construction the task
states (``Pager(lines: list[str], per_page: int = 10)``, ``Registry()``). A class whose
construction the task only describes ("a limit given at construction") is built with that one
argument, by position.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from atom_agent.state import Check
from atom_agent.verification.rules import (
    ERROR_CRITERION,
    RAISING,
    Fired,
    Rule,
    finditer,
    rules_of,
    search,
    unique,
)

__all__ = [
    "ERROR_CRITERION",
    "EXCEPTION_NAME",
    "Stated",
    "base_arguments",
    "call_source",
    "condition_checks",
    "construction",
    "described_constructions",
    "owners_of",
]

EXCEPTION_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b")


@dataclass(frozen=True)
class Stated:
    """A callable the task states: ``name`` (``Class`` for a constructor), owner, parameters."""

    name: str
    owner: str
    params: tuple[str, ...]
    annotations: tuple[str, ...]
    defaults: tuple[str | None, ...]
    """Each parameter's default as source, None when it has none."""
    described: str = ""
    """The rule that read a construction the task describes without writing it ('' if written):
    its parameter's name is a guess, so it is passed by position."""


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


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def described_constructions(
    text: str, classes: Sequence[str], stated: Mapping[str, Stated]
) -> dict[str, Stated]:
    """Constructions clause `text` describes ("a capacity given at construction").

    Only for a class the clause names (the only one it names) whose construction the task
    does not write out; the one parameter is named after the noun and has no known type.
    """
    named = [c for c in classes if re.search(rf"\b{re.escape(c)}\b", text)]
    match = search("constructor_argument", text)
    if match is None or len(named) != 1 or named[0] in stated:
        return {}
    return {
        named[0]: Stated(
            name=named[0],
            owner="",
            params=(match["noun"],),
            annotations=("",),
            defaults=(None,),
            described="constructor_argument",
        )  # fmt: skip
    }


def condition_checks(
    text: str,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    constructible: Sequence[str],
    previous: str = "",
) -> list[Fired]:
    """One check per condition clause `text` states on a parameter of a stated callable.

    Args:
        text: one clause of the task.
        stated: the task's stated signatures by qualified name (``f``, ``C``, ``C.m``).
        examples: for a function, the argument sources of a worked example (a valid call).
        constructible: classes whose construction the task states (methods get checks).
        previous: the clause before it when both are parts of one sentence: when `text`
            names no callable, it speaks of the one `previous` names ("Store(keys: list[str])
            takes the keys; they must be a non-empty list, or ValueError is raised").
    """
    excs = set(EXCEPTION_NAME.findall(text))
    if len(excs) != 1 or not RAISING.search(text):
        return []
    exc = excs.pop()
    fired: list[Fired] = []
    mentioned = _named(text, stated) or _named(previous, stated)
    for qualified, sig in stated.items():
        if sig.owner and sig.owner not in constructible:
            continue
        for rules, violation in _violations(text, sig, stated, examples, qualified, mentioned):
            call = call_source(sig, violation, stated)
            if call is not None:
                check = Check(call=call, raises=exc, criterion=ERROR_CRITERION, origin="task")
                fired.append(Fired(rules + ((sig.described,) if sig.described else ()), check))
    return unique(fired)


def _named(text: str, stated: Mapping[str, Stated]) -> list[str]:
    return [q for q, s in stated.items() if re.search(rf"(?<![\w.]){re.escape(s.name)}\b", text)]


def owners_of(param: str, stated: Mapping[str, Stated]) -> list[str]:
    """The stated callables with a parameter named `param`."""
    return [q for q, s in stated.items() if param in s.params]


def _subjects(text: str, p: str, params: Sequence[str]) -> list[tuple[tuple[str, ...], str]]:
    """The texts the condition rows read for parameter `p`.

    The clause, and each condition whose subject it elides right after mentioning `p` ("the
    size chosen by the caller (ValueError if < 2)" is read as "size < 2").
    """
    out: list[tuple[tuple[str, ...], str]] = [((), text)]
    (elided,) = rules_of("subject")
    others = [rf"\b{re.escape(o)}\b" for o in params if o != p]
    between = re.compile("|".join(others) or r"(?!x)x")
    subject = re.compile("|".join([*others, rf"\b{re.escape(p)}\b"]))
    for match in finditer(elided, text, P=re.escape(p)):
        # Not when another parameter comes between, or the condition names its own subject.
        if not between.search(match["between"]) and not subject.match(match["cond"]):
            out.append(((elided.name,), f"{p} {match['cond']}"))
    return out


def _violations(
    text: str,
    sig: Stated,
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    qualified: str,
    mentioned: Sequence[str],
) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """(rules, arguments by name) for each condition of `text` the arguments meet."""
    example = examples.get(qualified, ())
    base = _base(sig, example)
    # A stated default or a worked example's value is valid: a condition it meets is misread.
    # A placeholder is no such evidence (1 for an int that "must be at least 2").
    stated_values = {p: d for p, d in zip(sig.params, sig.defaults, strict=True) if d is not None}
    stated_values.update(zip(sig.params, example, strict=False))
    found: list[tuple[tuple[str, ...], dict[str, str]]] = []
    for i, p in enumerate(sig.params):
        owners = owners_of(p, stated)
        # The clause's condition is on this callable's parameter: the callable is the one
        # the clause names, or the only one with a parameter of that name.
        if qualified not in mentioned and owners != [qualified]:
            continue
        tokens = _tokens(p, sig.params)
        for via, read in _subjects(text, p, sig.params):
            for row in rules_of("condition"):
                found += [
                    ((*via, row.name), args)
                    for match in finditer(row, read, **tokens)
                    if (args := _meeting(row, match, sig, i, base, stated_values)) is not None
                ]
    if not found and (qualified in mentioned or len(stated) == 1):
        found += _described(text, sig, base)
    return found


def _tokens(p: str, params: Sequence[str]) -> dict[str, str]:
    others = "|".join(re.escape(o) for o in params if o != p) or r"(?!x)x"
    return {"P": rf"{re.escape(p)}s?", "ONE": re.escape(_singular(p)), "Q": others}


def _meeting(
    row: Rule,
    match: re.Match[str],
    sig: Stated,
    i: int,
    base: Mapping[str, str | None],
    valid: Mapping[str, str],
) -> dict[str, str] | None:
    """All arguments, parameter `i` changed so the row's condition holds (None: no safe call).

    `valid` holds the stated defaults and the values a worked example passes: none of them
    can be one that meets the condition.
    """
    p = sig.params[i]
    known = {k: v for k, v in base.items() if v is not None}
    value = row.value(match, sig.annotations[i], base[p] or "", known) if row.value else None
    if value is None or value == valid.get(p) or any(v is None for k, v in base.items() if k != p):
        return None
    return {**known, p: value}


def _described(
    text: str, sig: Stated, base: Mapping[str, str | None]
) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """An input described without a parameter ("an empty string") for the only one it fits."""
    found: list[tuple[tuple[str, ...], dict[str, str]]] = []
    for row in rules_of("described"):
        match = search(row.name, text)
        if match is None or row.value is None:
            continue
        fits = [(i, v) for i, a in enumerate(sig.annotations)
                if (v := row.value(match, a, "", {})) is not None]  # fmt: skip
        if len(fits) == 1 and all(v is not None for v in base.values()):
            i, value = fits[0]
            p = sig.params[i]
            if base[p] != value:
                found.append(((row.name,), {**{k: v or "" for k, v in base.items()}, p: value}))
    return found


def _base(sig: Stated, example: Sequence[str]) -> dict[str, str | None]:
    """A valid call's arguments; None for a parameter with no safe value.

    That parameter may be the one a condition changes; the others must all have a value.
    """
    if example and len(example) <= len(sig.params):
        values: dict[str, str | None] = dict(zip(sig.params, example, strict=False))
        for p, default in zip(sig.params, sig.defaults, strict=True):
            values.setdefault(p, default)
        return values
    counter: dict[str, int] = {}
    return {
        p: default if default is not None else _placeholder(annotation, counter)
        for p, annotation, default in zip(sig.params, sig.annotations, sig.defaults, strict=True)
    }


def base_arguments(sig: Stated, example: Sequence[str]) -> dict[str, str] | None:
    """A valid call's arguments: the worked example's, else defaults and plain typed values."""
    base = _base(sig, example)
    if any(v is None for v in base.values()):
        return None
    return {k: v for k, v in base.items() if v is not None}


def call_source(
    sig: Stated, arguments: Mapping[str, str], stated: Mapping[str, Stated]
) -> str | None:
    """The call of `sig` with every parameter by name; a method on a newly built object.

    A described construction passes its argument by position (its name is a guess). None
    when the object cannot be built (its stated construction has no safe arguments).
    """
    if sig.described:
        args = ", ".join(arguments[p] for p in sig.params)
    else:
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
