"""Properties a task states, as Hypothesis checks over generated inputs.

A round trip is stated in code ("unpack(pack(s)) == s for any string of digits") or in
words: "encoding then decoding returns the original", "dump then parse gives the data back",
"with tests covering round trips". Words name the functions by their verbs (encoding →
``b64_encode``) or, for "round trips", by a pair of the task's functions that undo each other
(``to_hex`` / ``from_hex``, ``pack`` / ``unpack``). The phrasings are the ``property`` rows of
:data:`~atom_agent.verification.rules.RULES`; the inputs are drawn from the domain the clause
names ("for any string of digits"), else from the first function's stated parameter type.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from atom_agent.names import called_names, shorthand_of
from atom_agent.state import Check
from atom_agent.verification.conditions import Stated
from atom_agent.verification.rules import (
    INVERSES,
    PROPERTY_CRITERION,
    RESTORES,
    Fired,
    finditer,
    rule,
    search,
    unique,
)

__all__ = [
    "PROPERTY_CRITERION",
    "named_by",
    "property_call",
    "property_checks",
    "single_parameter",
]

_FOR_ANY = re.compile(r"\bfor (?:any|all|every|each)\b|\balways\b", re.IGNORECASE)


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


_MADE_OF = r"(?:of|made (?:up )?of|consisting (?:only )?of|containing only|with only)"
_STRATEGIES = (
    (rf"\bstrings? {_MADE_OF} (?:ascii )?letters\b", _text("string.ascii_letters")),
    (rf"\bstrings? {_MADE_OF} (?:lowercase|lower-case) letters\b", _text("string.ascii_lowercase")),
    (rf"\bstrings? {_MADE_OF} digits\b", _text("string.digits")),
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
    "bytes": "st.binary(max_size=64)",
}


def property_checks(
    task: str, text: str, names: Sequence[str], stated: Mapping[str, Stated]
) -> list[Fired]:
    """Hypothesis checks of the properties clause `text` states, in code or in words."""
    fired = _in_code(task, text, names)
    fired += _in_words(task, text, names, stated)
    return unique(fired)


def _in_code(task: str, text: str, names: Sequence[str]) -> list[Fired]:
    """``expr(x) == x for any <domain>``."""
    if not _FOR_ANY.search(text):
        return []
    fired = []
    for match in re.finditer(rule("round_trip_expression").pattern, text):
        left, var = match.group("left"), match.group("right")
        for short in called_names(left):
            full = shorthand_of(short, [*names, short]) if short not in names else None
            if full is not None:  # decode(encode(s)) written for b64_decode / b64_encode
                left = re.sub(rf"(?<![\w.]){re.escape(short)}\(", f"{full}(", left)
        called = called_names(left)
        if not called or not set(called) <= set(names) or var in names:
            continue
        free = {n.id for n in ast.walk(_expr(left)) if isinstance(n, ast.Name)} - set(called)
        if free != {var}:
            continue
        strategy = _strategy(text[match.end() :]) or _annotated(task, called[-1])
        if strategy:
            fired.append(Fired(("round_trip_expression",), _check(left, var, strategy)))
    return fired


def _in_words(
    task: str, text: str, names: Sequence[str], stated: Mapping[str, Stated]
) -> list[Fired]:
    """'encoding then decoding gives back the original'; 'tests covering round trips'."""
    functions = [n for n in names if n in stated and not stated[n].owner]
    pairs: list[tuple[str, str, str]] = []
    for match in finditer(rule("round_trip_then"), text):
        inner, outer = named_by(match["first"], functions), named_by(match["second"], functions)
        if inner and outer and inner != outer and RESTORES.search(match["rest"]):
            pairs.append(("round_trip_then", inner, outer))
    if not pairs and search("round_trip_named", text):
        inverse = _inverse_pairs(functions)
        if len(inverse) == 1:
            pairs.append(("round_trip_named", *inverse[0]))
    fired = []
    for name, inner, outer in pairs:
        var = single_parameter(stated[inner])
        if var is None or single_parameter(stated[outer]) is None:
            continue
        drawn = _strategy(text, limit=len(text)) or _annotated(task, inner, stated)
        if drawn:
            fired.append(Fired((name,), _check(f"{outer}({inner}({var}))", var, drawn)))
    return fired


def _check(left: str, var: str, strategy: str) -> Check:
    return Check(
        call=property_call(f"{left} == {var}", var, strategy),
        expect="'holds'",
        criterion=PROPERTY_CRITERION,
        origin="task",
        label=f"{left} == {var} for generated {var}",
    )


def _stem(word: str) -> str:
    """A verb without its ending: encoding → encod, dumps → dump, wrapping → wrap."""
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:-1] if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "sl" else w


def named_by(word: str, functions: Sequence[str]) -> str:
    """The one function whose name holds the verb `word` ('' if none or several)."""
    stem = _stem(word)
    hits = [
        f
        for f in functions
        if any(
            part == word.lower() or (part.startswith(stem) and len(part) - len(stem) <= 2)
            for part in f.lower().split("_")
        )  # fmt: skip
    ]
    return hits[0] if len(hits) == 1 else ""


def _inverse_pairs(functions: Sequence[str]) -> list[tuple[str, str]]:
    """(forward, backward) pairs of functions whose names differ by verbs that undo each other."""
    found = []
    for f in functions:
        for g in functions:
            a, b = f.lower().split("_"), g.lower().split("_")
            if f == g or len(a) != len(b):
                continue
            if len(a) == 3 and a[1] == b[1] == "to" and a == b[::-1]:
                found.append((f, g))  # celsius_to_kelvin / kelvin_to_celsius
                continue
            differ = [i for i in range(len(a)) if a[i] != b[i]]
            if len(differ) == 1 and _undoes(a[differ[0]], b[differ[0]]):
                found.append((f, g))
    return [p for p in found if not (p[0] > p[1] and (p[1], p[0]) in found)]


def _undoes(forward: str, backward: str) -> bool:
    return (forward, backward) in INVERSES or backward in (f"de{forward}", f"un{forward}")


def single_parameter(sig: Stated) -> str | None:
    """The one parameter without a default (None if there are more or none)."""
    required = [p for p, d in zip(sig.params, sig.defaults, strict=True) if d is None]
    return required[0] if len(required) == 1 else None


def property_call(condition: str, var: str, strategy: str) -> str:
    """A check call that runs ``assert condition`` for `var` drawn from `strategy`.

    Its value is ``'holds'``, or the shrunk counterexample with what each call of the
    condition's left side gave on it, innermost first (:func:`_trace_steps`): ``fails for
    n=16: to_hex(n) returned '1'; from_hex(to_hex(n)) returned 1``. A retry is told which
    call went wrong and on what, not only the input.
    """
    steps = _trace_steps(condition)
    return "\n".join(
        [
            "import copy, string",
            "from hypothesis import given, settings, strategies as st",
            "atom_seen = []",
            "@settings(max_examples=150, database=None, deadline=None, derandomize=True)",
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


def _strategy(after: str, limit: int = 80) -> str:
    words = after[:limit]
    for pattern, strategy in _STRATEGIES:
        if re.search(pattern, words, re.IGNORECASE):
            return strategy
    return ""


def _annotated(task: str, name: str, stated: Mapping[str, Stated] | None = None) -> str:
    """The strategy for `name`'s first parameter from its annotation in the task ('' if none).

    The plain types draw as above; any other type the task states (``dict[str, int]``) draws
    small values of that type.
    """
    match = re.search(rf"\b{re.escape(name)}\(\s*\w+\s*:\s*([\w\[\]]+)", task)
    found = _ANNOTATIONS.get(match.group(1), "") if match else ""
    sig = (stated or {}).get(name)
    if found or sig is None or not sig.annotations or not sig.annotations[0]:
        return found
    try:
        node = ast.parse(sig.annotations[0].strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return ""
    return _typed(node) or ""


_TYPED = {
    "int": "st.integers(-20, 60)",
    "float": "st.floats(-100, 100, allow_nan=False, allow_infinity=False)",
    "str": "st.text(alphabet=string.ascii_letters + string.digits + ' -_.,:', max_size=10)",
    "bool": "st.booleans()",
    "None": "st.none()",
}
_SEQUENCES = {"list", "List", "Sequence", "Iterable", "Collection", "MutableSequence"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet"}
_TUPLES = {"tuple", "Tuple"}


def _typed(node: ast.expr) -> str | None:
    """A strategy drawing small values of the annotation `node` (None: a type it cannot draw)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return _TYPED["None"]
    if isinstance(node, ast.Name | ast.Attribute):
        return _TYPED.get(node.id if isinstance(node, ast.Name) else node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _each("one_of", [node.left, node.right])
    if not isinstance(node, ast.Subscript):
        return None
    head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if head == "Optional" and len(args) == 1:
        return _each("one_of", [args[0], ast.Constant(None)])
    if head == "Union":
        return _each("one_of", args)
    if head in _TUPLES:
        if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
            inner = _typed(args[0])
            return None if inner is None else f"st.lists({inner}, max_size=6).map(tuple)"
        return _each("tuples", args)
    parts = [_typed(a) for a in args]
    if None in parts:
        return None
    if head in _SEQUENCES and len(parts) == 1:
        return f"st.lists({parts[0]}, max_size=6)"
    if head in _SETS and len(parts) == 1:
        return f"st.sets({parts[0]}, max_size=5)"
    if head in _MAPPINGS and len(parts) == 2:
        return f"st.dictionaries({parts[0]}, {parts[1]}, max_size=5)"
    return None


def _each(combinator: str, nodes: Sequence[ast.expr]) -> str | None:
    parts = [p for n in nodes if (p := _typed(n)) is not None]
    return f"st.{combinator}({', '.join(parts)})" if len(parts) == len(nodes) else None
