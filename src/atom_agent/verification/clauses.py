"""A task's clauses, found by code, each with the checks that execute it.

A task states behaviour sentence by sentence: a signature with its defaults, an error and the
inputs that raise it, worked examples, a property "for any …". Each sentence (or bullet, or
``;``-separated part) is a clause; code gives it the checks it can read with certainty:

- a stated signature (``allocate(total: int, weights: list[int], unit: int = 1)``,
  ``deposit(amount)`` of a class) → an ``inspect.signature`` check of its parameter names and
  defaults, no model involved;
- examples in any form the extractor reads (``f(x) == y``, ``'a' -> 'b'``, doctests) and errors
  with their inputs ("raises ValueError on input such as 'a3' or '3'", "e.g.", "for example");
- a property ("decode(encode(s)) == s for any string of letters") → a Hypothesis test over
  generated inputs, whose failure names the shrunk counterexample.

The planner model's contract comes second: its checks are attributed to the clause they share
the most with (:func:`attribute`). A clause with no check is listed as *unchecked*, never
verified (:func:`coverage`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from atom_agent.checks.contract import SIGNATURE_CRITERION, check_problems
from atom_agent.checks.extract import TASK_CRITERION, in_call, task_checks
from atom_agent.names import (
    called_names,
    code_blocks,
    named_in_text,
    owner_class,
    shorthand_of,
    without_methods,
    without_shorthands,
)
from atom_agent.state import Check, Clause
from atom_agent.verification.conditions import ERROR_CRITERION, Stated, condition_checks
from atom_agent.verification.outcomes import outcome_checks
from atom_agent.verification.typed import TYPES_CRITERION, annotation_prefix, typed_checks

PROPERTY_CRITERION = "the properties the task states hold over generated inputs"
CODE_CRITERIA = frozenset(
    {SIGNATURE_CRITERION, PROPERTY_CRITERION, ERROR_CRITERION, TASK_CRITERION, TYPES_CRITERION}
)
"""The criteria of the checks code reads from the task (the rest are the planner's prose)."""

_META = re.compile(
    r"^\s*(?:please\s+)?(?:include|add|write|with)\s+(?:some\s+|the\s+)?(?:pytest\s+|unit\s+)?"
    r"tests?\b",
    re.IGNORECASE,
)
_FENCE_MARK = re.compile(r"```[A-Za-z0-9_+-]*")
_EXC = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception)|[A-Z][a-z]+[A-Z][A-Za-z]*)\b")
_SIGNATURE_HEAD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_RETURN = re.compile(r"\s*->\s*([A-Za-z_][\w\[\], |]*)")
_FOR_ANY = re.compile(r"\bfor (?:any|all|every|each)\b|\balways\b", re.IGNORECASE)
_EXAMPLES_WORDS = re.compile(
    r"\b(?:such as|e\.g\.|for example|for instance|like|including)\s*:?\s*", re.IGNORECASE
)
_LITERAL = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]+`|-?\d+(?:\.\d+)?")


def task_clauses(task: str, *, names: Sequence[str] | None = None) -> list[Clause]:
    """The clauses of `task` with the checks code can read from each (ids ``c1``, ``c2`` …).

    Args:
        task: the task as the user wrote it.
        names: the functions and classes the task asks for (default: those it names).
    """
    mentioned = without_shorthands(named_in_text(task))
    names = list(names) if names is not None else without_methods(task, mentioned)
    classes = [n for n in names if n[:1].isupper()]
    # Methods have signatures too, but are never called bare in an example.
    signed = list(dict.fromkeys([*names, *mentioned]))
    clauses: list[Clause] = []
    seen: set[str] = set()
    parts = _statements(task, split_clauses(task), signed, classes)
    stated = _stated(task, parts, signed, classes)
    examples = _example_arguments(task, names)
    constructible = [c for c in classes if c in stated or re.search(rf"\b{c}\(\)", task)]
    for i, (text, start) in enumerate(parts):
        if _META.match(text):
            continue
        before = parts[i - 1][0] if i else ""
        same_sentence = before if before.rstrip().endswith((";", ":", ",")) else ""
        after = parts[i + 1][0] if i + 1 < len(parts) else ""
        # "The word must be a non-empty string …; otherwise add raises ValueError": one rule.
        rule = f"{text} {after}" if re.match(r"otherwise\b", after, re.I) else text
        checks = _clause_checks(task, text, start, names, classes, signed)
        checks += [
            c
            for c in [
                *condition_checks(rule, stated, examples, constructible),
                *outcome_checks(text, stated, examples, constructible, same_sentence),
            ]
            if not check_problems(c, defines=names)
        ]
        fresh = list({c.describe(): c for c in checks if c.describe() not in seen}.values())
        seen |= {c.describe() for c in fresh}
        clause_id = f"c{len(clauses) + 1}"
        clauses.append(
            Clause(
                id=clause_id,
                text=text,
                kind=_kind(text, fresh),
                checks=[c.model_copy(update={"clause": clause_id}) for c in fresh],
            )
        )
    _add_typed(clauses, typed_checks(stated, task, constructible), names)
    # Examples code reads only from the whole text (doctest blocks, code): a clause of their own.
    calls = {c.call for cl in clauses for c in cl.checks}
    rest = [
        c
        for c in task_checks(task, names=names)
        if c.describe() not in seen and c.call not in calls and not check_problems(c, defines=names)
    ]
    if rest:
        clause_id = f"c{len(clauses) + 1}"
        clauses.append(
            Clause(
                id=clause_id,
                text="the examples in the task's code",
                kind="example",
                checks=[c.model_copy(update={"clause": clause_id}) for c in rest],
            )
        )
    return clauses


_AND_NEXT = re.compile(r",\s+and\s+(?=([A-Za-z_]\w*)\()")


def _statements(
    task: str, parts: Sequence[tuple[str, int]], signed: Sequence[str], classes: Sequence[str]
) -> list[tuple[str, int]]:
    """`parts` with a sentence stating two signatures split into one clause per signature.

    "Write merge_intervals(…) that merges …, and insert_interval(intervals, new) that inserts
    …" states two functions: each statement is a clause, so a check of one never covers the
    other. Only at ", and name(" where a signature is stated; "f(s) and g(s) for …", which
    says one thing of both, stays whole.
    """
    out: list[tuple[str, int]] = []
    for text, start in parts:
        cut = 0
        for match in _AND_NEXT.finditer(text):
            rest = text[match.end() :]
            stated = stated_signatures(task, rest, start + match.end(), signed, classes)
            name = match.group(1)  # where `rest` starts
            if stated and stated[0].name == name and text[cut : match.start()].strip():
                out.append((text[cut : match.start()].strip(), start + cut))
                cut = match.end()
        out.append((text[cut:], start + cut))
    return out


def _add_typed(clauses: list[Clause], checks: Sequence[Check], names: Sequence[str]) -> None:
    """Each generated-input check joins the first clause that writes out its callable's call."""
    for check in checks:
        if check_problems(check, defines=names):
            continue
        used = [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}\b", check.call)]
        for i, clause in enumerate(clauses):
            if any(re.search(rf"(?<![\w.]){re.escape(n)}\(", clause.text) for n in used):
                placed_check = check.model_copy(update={"clause": clause.id})
                clauses[i] = clause.model_copy(update={"checks": [*clause.checks, placed_check]})
                break


def _stated(
    task: str, parts: Sequence[tuple[str, int]], signed: Sequence[str], classes: Sequence[str]
) -> dict[str, Stated]:
    """Every signature the task states, by qualified name (``f``, ``C``, ``C.m``)."""
    found: dict[str, Stated] = {}
    for text, start in parts:
        for sig in stated_signatures(task, text, start, signed, classes):
            qualified = f"{sig.owner}.{sig.name}" if sig.owner else sig.name
            found.setdefault(
                qualified,
                Stated(
                    name=sig.name,
                    owner=sig.owner,
                    params=tuple(p for p, _ in sig.params),
                    annotations=sig.annotations,
                    defaults=tuple(d for _, d in sig.params),
                    returns=sig.returns,
                ),
            )
    return found


def _example_arguments(task: str, names: Sequence[str]) -> dict[str, list[str]]:
    """The positional arguments of each function's first worked example (a valid call)."""
    found: dict[str, list[str]] = {}
    for check in task_checks(task, names=list(names)):
        if check.raises or "\n" in check.call.strip():
            continue
        try:
            node = ast.parse(check.call.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and not node.keywords
            and all(_is_literal(ast.unparse(a)) for a in node.args)
        ):
            found.setdefault(node.func.id, [ast.unparse(a) for a in node.args])
    return found


def split_clauses(task: str) -> list[tuple[str, int]]:
    """Sentences, bullets and ``;``-parts of `task` outside code, with their start offsets."""
    text = task
    for block in code_blocks(task):
        text = text.replace(block, " " * len(block))
    # The fences too: "```python" is no sentence of the task (offsets stay as they were).
    text = _FENCE_MARK.sub(lambda m: " " * len(m.group()), text)
    parts: list[tuple[str, int]] = []
    start = 0
    depth, quote = 0, ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"`" and (i == 0 or not text[i - 1].isalnum()):
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and _ends_clause(text, i):
            parts.append((text[start : i + 1], start))
            start = i + 1
        i += 1
    parts.append((text[start:], start))
    out: list[tuple[str, int]] = []
    for part, offset in parts:
        stripped = part.strip().strip("-*").strip()
        if len(re.findall(r"[A-Za-z]", stripped)) >= 3:
            out.append((stripped, offset + part.find(stripped[:1])))
    return out


def _ends_clause(text: str, i: int) -> bool:
    ch = text[i]
    if ch == "\n":
        return text[i + 1 : i + 2] == "\n" or bool(re.match(r"\s*[-*]\s", text[i + 1 :]))
    if ch == ";":
        return True
    if ch not in ".!?":
        return False
    after = text[i + 1 : i + 2]
    if after and not after.isspace():
        return False  # 3.5, e.g., file.py
    before = text[max(0, i - 4) : i + 1].lower()
    return not before.endswith(("e.g.", "i.e.", "etc.", "vs."))


def _kind(text: str, checks: Sequence[Check]) -> str:
    if any(c.criterion == SIGNATURE_CRITERION for c in checks):
        return "signature"
    if any(c.criterion == PROPERTY_CRITERION for c in checks):
        return "property"
    if checks and all(c.raises for c in checks) or _EXC.search(text) and "rais" in text.lower():
        return "error"
    if checks:
        return "example"
    return "behaviour"


def _clause_checks(
    task: str, text: str, start: int, names: list[str], classes: list[str], signed: list[str]
) -> list[Check]:
    checks = [*signature_checks(task, text, start, signed, classes)]
    checks += task_checks(text, names=names)
    checks += error_examples(text, names, task=task)
    checks += property_checks(task, text, names)
    # Only what can run on code that defines the task's names (not ``decode(encode(s)) == s``
    # as a bare example: its `s` is the property's variable).
    return [c for c in checks if not check_problems(c, defines=names)]


# --- signatures ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """A signature the task states: the name, its owner class (if a method), the parameters."""

    name: str
    owner: str
    params: tuple[tuple[str, str | None], ...]
    """(name, repr of the default or None) per parameter, ``self`` left out."""
    annotations: tuple[str, ...] = ()
    """Each parameter's annotation as written ('' where none)."""
    returns: str = ""
    """The result's annotation as written after ``->`` ('' where none)."""


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
        close = _closing_paren(text, match.end() - 1)
        if close is None or name not in names or in_call(text, match.start()):
            continue
        inner = text[match.end() : close]
        returns = _RETURN.match(text[close + 1 :])  # says it is a signature; never compared
        header = f"def {name}({inner})"
        try:
            node = ast.parse(header + ": pass").body[0]
        except (SyntaxError, ValueError):
            continue
        if not isinstance(node, ast.FunctionDef) or _has_literal_args(inner):
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
        result = annotation_prefix(text[close + 1 + returns.start(1) :]) if returns else ""
        found.append(Signature(name, owner, params, annotations, result))
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


def _has_literal_args(inner: str) -> bool:
    """``f('x', 3)`` is an example call, not a signature."""
    return bool(re.match(r"\s*(?:['\"\d\[\(-])", inner))


def _closing_paren(text: str, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _first_mention(task: str, name: str) -> int:
    match = re.search(rf"(?<![\w.]){re.escape(name)}\b", task)
    return match.start() if match else len(task)


# --- errors with their inputs --------------------------------------------------------------------


def error_examples(text: str, names: Sequence[str], *, task: str = "") -> list[Check]:
    """Errors a clause states with example inputs, in any phrasing ("such as", "e.g." …).

    "rle_decode raises ValueError on malformed input such as 'a3' or '3'" → one check per
    literal. The function is the one the clause names (the only one, when it names several
    it must come before the exception). Class errors are left to scenarios. When the `task`
    states the function's first parameter as a list ("f(items: list[str])"), an example
    that is not a list is one invalid item: it is passed in a list of its own.
    """
    exc = _exception(text)
    functions = [n for n in names if not n[:1].isupper()]
    if not exc or not functions:
        return []
    mentioned = [n for n in functions if re.search(rf"(?<![\w.]){re.escape(n)}\b", text)]
    target = mentioned[0] if len(mentioned) == 1 else (functions[0] if len(functions) == 1 else "")
    if not target:
        return []
    wrap = bool(_LIST_PARAM.search(_first_annotation(task or text, target)))
    checks = []
    for match in _EXAMPLES_WORDS.finditer(text):
        tail = text[match.end() :]
        tail = re.split(r"[.;)](?:\s|$)", tail, maxsplit=1)[0]
        for item in re.split(r"\s*(?:,|\bor\b|\band\b)\s*", tail):
            literal = item.strip().strip("`")
            if literal and _is_literal(literal):
                if wrap and not isinstance(ast.literal_eval(literal), list | tuple):
                    literal = f"[{literal}]"
                checks.append(
                    Check(
                        call=f"{target}({literal})",
                        raises=exc,
                        criterion=ERROR_CRITERION,
                        origin="task",
                    )
                )
    return checks


_LIST_PARAM = re.compile(r"^(?:list|List|Sequence|Iterable|tuple\[[^\]]*,\s*\.\.\.)\b")


def _first_annotation(task: str, name: str) -> str:
    """The annotation of `name`'s first parameter as the task writes it ('' if none)."""
    match = re.search(rf"(?<![\w.]){re.escape(name)}\(\s*\w+\s*:\s*([^,)=]+)", task)
    return match.group(1).strip() if match else ""


def _exception(text: str) -> str:
    """The exception a clause says is raised ('' if none)."""
    lowered = text.lower()
    if "rais" not in lowered and "error" not in lowered:
        return ""
    match = re.search(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b", text)
    return match.group(1) if match else ""


def _is_literal(source: str) -> bool:
    try:
        ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


# --- properties over generated inputs ------------------------------------------------------------


def _text(alphabet: str) -> str:
    """Strings over `alphabet`, half of them made of runs of one character (up to 15 long).

    Uniform random text almost never repeats a character ten times; runs are where length
    and count edge cases live (counts past 9, long repeats), so they are drawn on purpose.
    """
    return (
        f"st.one_of(st.text(alphabet={alphabet}), st.lists(st.tuples(st.sampled_from("
        f"{alphabet}), st.integers(1, 15)), max_size=6).map("
        "lambda runs: ''.join(c * n for c, n in runs)))"
    )


_STRATEGIES = (
    (r"\bstrings? of (?:ascii )?letters\b", _text("string.ascii_letters")),
    (r"\bstrings? of (?:lowercase|lower-case) letters\b", _text("string.ascii_lowercase")),
    (r"\bstrings? of digits\b", _text("string.digits")),
    (r"\blists? of (?:ints?|integers?)\b", "st.lists(st.integers(-1000, 1000))"),
    (r"\bnon-?negative (?:ints?|integers?)\b", "st.integers(0, 10**6)"),
    (r"\bpositive (?:ints?|integers?)\b", "st.integers(1, 10**6)"),
    (r"\b(?:ints?|integers?)\b", "st.integers(-(10**6), 10**6)"),
    (r"\bfloats?\b", "st.floats(-1e6, 1e6, allow_nan=False)"),
    (r"\b(?:strings?|str|text)\b", _text("string.printable")),
)
_ANNOTATIONS = {
    "str": _text("string.printable"),
    "int": "st.integers(-(10**6), 10**6)",
    "float": "st.floats(-1e6, 1e6, allow_nan=False)",
    "list[int]": "st.lists(st.integers(-1000, 1000))",
}
_PROPERTY = re.compile(r"(?P<left>[A-Za-z_][\w.]*\([^=<>!]*\))\s*==\s*(?P<right>[A-Za-z_]\w*)\b")


def property_checks(task: str, text: str, names: Sequence[str]) -> list[Check]:
    """A Hypothesis check for "expr(x) == x for any <domain>" in clause `text`."""
    if not _FOR_ANY.search(text):
        return []
    checks = []
    for match in _PROPERTY.finditer(text):
        left, var = match.group("left"), match.group("right")
        for short in called_names(left):
            full = shorthand_of(short, [*names, short]) if short not in names else None
            if full is not None:  # decode(encode(s)) written for rle_decode / rle_encode
                left = re.sub(rf"(?<![\w.]){re.escape(short)}\(", f"{full}(", left)
        called = called_names(left)
        if not called or not set(called) <= set(names) or var in names:
            continue
        free = {n.id for n in ast.walk(_expr(left)) if isinstance(n, ast.Name)} - set(called)
        if free != {var}:
            continue
        strategy = _strategy(text[match.end() :]) or _annotated(task, called[-1])
        if not strategy:
            continue
        checks.append(
            Check(
                call=property_call(f"{left} == {var}", var, strategy),
                expect="'holds'",
                criterion=PROPERTY_CRITERION,
                origin="task",
                label=f"{left} == {var} for generated {var}",
            )
        )
    return checks


def property_call(condition: str, var: str, strategy: str, examples: int = 150) -> str:
    """A check call that runs ``assert condition`` for `var` drawn from `strategy`.

    Its value is ``'holds'``, or the shrunk counterexample with what each call of the
    condition's left side gave on it, innermost first (:func:`_trace_steps`): ``fails for
    s='AAAAAAAAAA': rle_encode(s) returned '10A'; rle_decode(rle_encode(s)) raised
    ValueError: …``. A retry is told which call went wrong and on what, not only the input.
    """
    steps = _trace_steps(condition)
    return "\n".join(
        [
            "import copy, string",
            "from hypothesis import given, settings, strategies as st",
            "atom_seen = []",
            f"@settings(max_examples={examples}, database=None, deadline=None, derandomize=True)",
            f"@given({strategy})",
            f"def atom_property({var}):",
            "    try:",
            f"        atom_seen.append(copy.deepcopy({var}))",
            "    except Exception:",
            f"        atom_seen.append({var})",
            f"    assert {condition}",
            f"def atom_trace({var}):",
            "    shown = []",
            f"    for text, get in [{', '.join(f'({t!r}, lambda {var}: {t})' for t in steps)}]:",
            "        try:",
            f"            got = repr(get(copy.deepcopy({var})))[:80]",
            "            shown.append(f'{text} returned {got}')",
            "        except Exception as exc:",
            "            shown.append(f'{text} raised {type(exc).__name__}: {exc}'[:160])",
            "            break",
            "    return '; '.join(shown)",
            "def atom_holds(test):",
            "    try:",
            "        test()",
            "    except Exception as exc:",
            "        if atom_seen:  # Hypothesis runs the shrunk example last",
            "            case = atom_seen[-1]",
            "            trace = atom_trace(case)",
            f"            return f'fails for {var}={{repr(case)[:80]}}: {{trace}}'[:400]",
            "        notes = ' '.join(' '.join(getattr(exc, '__notes__', [])).split())",
            "        return f'fails: {notes or type(exc).__name__}'[:300]",
            "    return 'holds'",
            "atom_holds(atom_property)",
        ]
    )


def _trace_steps(condition: str) -> list[str]:
    """The calls on the left of ``left == var``, innermost first (``g(s)``, ``f(g(s))``)."""
    tree = _expr(condition)
    compare = getattr(tree, "body", None)
    left = compare.left if isinstance(compare, ast.Compare) else compare
    if left is None:
        return []
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            visit(child)
        if isinstance(node, ast.Call):
            found.append(ast.unparse(node))

    visit(left)
    return list(dict.fromkeys(found))


def _expr(source: str) -> ast.AST:
    try:
        return ast.parse(source, mode="eval")
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def _strategy(after: str) -> str:
    words = after[:80]
    for pattern, strategy in _STRATEGIES:
        if re.search(pattern, words, re.IGNORECASE):
            return strategy
    return ""


def _annotated(task: str, name: str) -> str:
    """The strategy for `name`'s first parameter from its annotation in the task ('' if none)."""
    match = re.search(rf"\b{re.escape(name)}\(\s*\w+\s*:\s*([\w\[\]]+)", task)
    return _ANNOTATIONS.get(match.group(1), "") if match else ""


# --- the planner model's checks, and coverage ----------------------------------------------------


def attribute(check: Check, clauses: Sequence[Clause]) -> str:
    """The clause a model-written check executes: the one it shares most with ('' if none).

    Shared: the exception it expects, the names it calls, the literals it uses.
    """
    best, best_score = "", 0
    literals = set(_LITERAL.findall(check.call + " " + check.expect))
    names = set(re.findall(r"[A-Za-z_]\w*", check.call))
    for clause in clauses:
        if clause.kind == "signature":
            continue
        score = 0
        if check.raises and check.raises.split(".")[-1] in clause.text:
            score += 3
        score += sum(1 for n in names if len(n) > 2 and re.search(rf"\b{n}\b", clause.text))
        score += sum(2 for lit in literals if len(lit) > 1 and lit in clause.text)
        if score > best_score:
            best, best_score = clause.id, score
    return best


def placed(check: Check, task: str, clauses: Sequence[Clause]) -> Check:
    """A model-written check with its clause; one that only restates the task is the task's."""
    if check.origin != "planner":
        return check
    update: dict[str, str] = {"clause": check.clause or attribute(check, clauses)}
    if restates_task(check, task):
        update["origin"] = "task"
    return check.model_copy(update=update)


def restates_task(check: Check, task: str) -> bool:
    """Whether a check only restates what the task says (then it is the task's word).

    Every literal input of the call appears in the task, and so does the expected value (or
    the exception): "invalid inputs such as 'a3' raise ValueError" restated as
    ``rle_decode('a3') raises ValueError`` is the task's own check, whoever wrote it.
    """
    try:
        tree = ast.parse(check.call)
    except (SyntaxError, ValueError):
        return False
    literals = [
        ast.get_source_segment(check.call, n) or ""
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value is not None and not isinstance(n.value, bool)
    ]
    if not literals:
        return False
    if len(tree.body) != 1:
        return any(_restates(check, literals, text) for text, _ in split_clauses(task))
    return _restates(check, literals, task)


def _restates(check: Check, literals: Sequence[str], text: str) -> bool:
    """Every literal of the check and its result or exception appear in `text`.

    A scenario (setup lines, then the expression) must restate one clause: the worked example
    "with headers ['name', 'qty'] and the rows ('apple', 3) …, render() returns '…'" written
    as a sequence of calls; its result must be a literal that is not a bare True/False/None.
    """
    if not all(_in_task(lit, text) for lit in literals):
        return False
    if check.raises:
        return check.raises.split(".")[-1] in text
    expect = check.expect.strip()
    if not expect or not _in_task(expect, text):
        return False
    if "\n" in check.call.strip():
        try:
            value = ast.literal_eval(expect)
        except (SyntaxError, ValueError):
            return False
        return value is not None and not isinstance(value, bool)
    return True


def _in_task(literal: str, task: str) -> bool:
    if literal in task:
        return True
    if literal[:1] in "'\"":  # 'x' written as "x" or `x`
        inner = literal[1:-1]
        return any(f"{q}{inner}{q}" in task for q in ("'", '"', "`"))
    return False


@dataclass
class Coverage:
    """Which clauses an executed report verified, which failed, which no check covers."""

    verified: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many clauses the task has."""
        return len(self.verified) + len(self.failed) + len(self.unchecked) + len(self.not_run)

    def summary(self) -> str:
        """``13 clauses: 11 verified, 2 unchecked ("…", "…")``."""
        if not self.total:
            return ""
        parts = [f"{len(self.verified)} verified"]
        for label, ids in (("failed", self.failed), ("not run", self.not_run),
                           ("unchecked", self.unchecked)):  # fmt: skip
            if ids:
                shown = "; ".join(_short(self.texts.get(i, i)) for i in ids[:4])
                more = f"; +{len(ids) - 4} more" if len(ids) > 4 else ""
                parts.append(f"{len(ids)} {label} ({shown}{more})")
        return f"{self.total} clauses: " + ", ".join(parts)

    def to_dict(self) -> dict[str, list[str]]:
        """For run.json and plan.json."""
        return {
            "verified": self.verified,
            "failed": self.failed,
            "unchecked": self.unchecked,
            "not_run": self.not_run,
        }


def _short(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text[:60]}…"' if len(text) > 60 else f'"{text}"'


SIGNATURE_PASSED = "passed (signature)"
"""The status a passing signature check of a clause is reported under (:func:`coverage`)."""


def coverage(clauses: Iterable[Clause], results: Mapping[str, Sequence[str]]) -> Coverage:
    """Each clause's status from `results` (clause id → statuses of its executed checks).

    A clause is verified when a check of it passed and none failed; failed when one failed;
    not run when it has checks none of which ran (its step was not committed); unchecked when
    it has no check at all. A passing signature check (``SIGNATURE_PASSED``) verifies only a
    clause that states nothing beyond the signature ("Autocomplete() takes no arguments"):
    "free_slots(room, start, end) returns the free stretches …" is unchecked until something
    executes what it computes.
    """
    out = Coverage()
    for clause in clauses:
        out.texts[clause.id] = clause.text
        statuses = list(results.get(clause.id, []))
        if any(s in ("failed", "error", "timeout") for s in statuses):
            out.failed.append(clause.id)
        elif "passed" in statuses:
            out.verified.append(clause.id)
        elif SIGNATURE_PASSED in statuses:
            (out.unchecked if states_behaviour(clause.text) else out.verified).append(clause.id)
        elif clause.checks or statuses:
            out.not_run.append(clause.id)
        else:
            out.unchecked.append(clause.id)
    return out


_SIGNATURE_CALL = re.compile(r"\b[A-Za-z_][\w.]*\s*\(")


def states_behaviour(text: str) -> bool:
    """Whether a clause says more than a signature: five or more words besides its calls.

    Each ``name(…)`` and a ``-> type`` after it are taken out first.
    """
    rest, at = "", 0
    for match in _SIGNATURE_CALL.finditer(text):
        if match.start() < at:
            continue
        close = _closing_paren(text, match.end() - 1)
        if close is None:
            break
        rest += text[at : match.start()]
        at = close + 1
        arrow = re.match(r"\s*->\s*[\w\[\], .|]*?(?=\s+[a-z]{3,}\b|[;:.]?\s*$)", text[at:])
        if arrow:
            at += arrow.end()
    rest += text[at:]
    return len(re.findall(r"[A-Za-z]{2,}", rest)) >= 5
