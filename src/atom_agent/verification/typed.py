"""Checks from the types a task states: generated inputs of those types, handled without a crash.

"merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]" says which inputs
the function takes and what it gives back, even where the task gives no example. Code builds a
Hypothesis test from it, no model involved: inputs drawn from the annotated types (small ones),
and for a class, short scenarios of calls on one object built the way the task states. A call
fails the check when it raises ``TypeError`` or ``AttributeError`` (what code that mishandles
the stated types raises: ``'tuple' object does not support item assignment``) or returns a value
of another type than the stated one (``None`` excepted: code may fall through on an input it does
not expect). Every other exception passes: a generated input may break a
precondition the prose states, and the code is right to refuse it (``ValueError``, ``KeyError``,
``IndexError``), and a call slower than a quarter second is skipped, not blamed.

These checks infer, they do not restate: their origin is ``inferred``, so cross-examination may
discount one that every independent implementation fails (a precondition the types do not say),
and a passing one verifies no clause's behaviour (it is reported like a signature check).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

from atom_agent.checks.contract import TYPES_CRITERION
from atom_agent.state import Check
from atom_agent.verification.conditions import Stated

__all__ = ["TYPES_CRITERION", "annotation_prefix", "shape_of", "strategy", "typed_checks"]

WATCHED = ("TypeError", "AttributeError")
"""What code that mishandles its stated types raises (unless the task names it)."""
MAX_EXAMPLES = 60
"""Generated inputs (or scenarios) per check."""
MAX_CALLS = 6
"""Calls per generated scenario on one object."""
SECONDS_PER_CALL = 0.25
"""A call slower than this is skipped (a precondition may make code loop), not blamed."""
SECONDS_PER_CHECK = 3.0
"""Generated inputs stop being tried after this long (the check runner's limit is 5 s)."""

_INT = "st.integers(-20, 60)"
_FLOAT = "st.floats(-100, 100, allow_nan=False, allow_infinity=False)"
_TEXT = "st.text(alphabet=string.ascii_letters + string.digits + ' -_.,:', max_size=10)"
_SEQUENCES = {"list", "List", "Sequence", "Iterable", "Collection", "MutableSequence"}
_MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping"}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet"}
_TUPLES = {"tuple", "Tuple"}

Shape = tuple[
    Any, ...
]  # ('int',), ('list', inner), ('tuple', (a, b)), ('union', (a, b)), ('any',) …


def annotation_prefix(text: str) -> str:
    """The type annotation at the start of `text` (``list[int] that …`` → ``list[int]``)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            if depth < 0:
                return text[:i].strip()
        elif depth == 0 and ch in ",;:." and not text[i + 1 : i + 2].isalnum():
            return text[:i].strip()
        elif depth == 0 and ch.isspace():
            rest = text[i:].lstrip()
            before = text[:i].rstrip()
            if not rest.startswith("|") and not before.endswith("|"):
                return before
    return text.strip()


def shape_of(annotation: str) -> Shape | None:
    """The checkable shape of an annotation (None: a type code cannot draw or check)."""
    try:
        node = ast.parse(annotation.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return _shape(node)


def _shape(node: ast.expr) -> Shape | None:
    if isinstance(node, ast.Constant) and node.value is None:
        return ("none",)
    if isinstance(node, ast.Name | ast.Attribute):
        name = node.id if isinstance(node, ast.Name) else node.attr
        if name in ("int", "float", "str", "bool"):
            return (name,)
        if name in _SEQUENCES:
            return ("list", ("any",))
        if name in _TUPLES:
            return ("tuple...", ("any",))
        if name in _MAPPINGS:
            return ("dict", ("any",), ("any",))
        if name == "None":
            return ("none",)
        if name == "Any":
            return ("any",)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _shape(node.left), _shape(node.right)
        return None if left is None or right is None else ("union", (left, right))
    if not isinstance(node, ast.Subscript):
        return None
    head = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if head == "Optional" and len(args) == 1:
        inner = _shape(args[0])
        return None if inner is None else ("union", (inner, ("none",)))
    if head == "Union":
        parts = [_shape(a) for a in args]
        return None if any(p is None for p in parts) else ("union", tuple(parts))
    if head in _TUPLES:
        if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
            inner = _shape(args[0])
            return None if inner is None else ("tuple...", inner)
        parts = [_shape(a) for a in args]
        return None if any(p is None for p in parts) else ("tuple", tuple(parts))
    parts = [_shape(a) for a in args]
    if any(p is None for p in parts):
        return None
    if head in _SEQUENCES and len(parts) == 1:
        return ("list", parts[0])
    if head in _SETS and len(parts) == 1:
        return ("set", parts[0])
    if head in _MAPPINGS and len(parts) == 2:
        return ("dict", parts[0], parts[1])
    return None


def strategy(shape: Shape) -> str | None:
    """A Hypothesis strategy (source) drawing small values of `shape` (None: cannot draw)."""
    kind = shape[0]
    simple = {"int": _INT, "float": _FLOAT, "str": _TEXT, "bool": "st.booleans()",
              "none": "st.none()"}  # fmt: skip
    if kind in simple:
        return simple[kind]
    if kind == "any":
        return None
    if kind in ("list", "tuple...", "set"):
        inner = strategy(shape[1])
        if inner is None:
            return None
        if kind == "set":
            return f"st.sets({inner}, max_size=5)"
        drawn = f"st.lists({inner}, max_size=6)"
        return drawn if kind == "list" else f"{drawn}.map(tuple)"
    if kind == "dict":
        key, value = strategy(shape[1]), strategy(shape[2])
        return (
            None if key is None or value is None else f"st.dictionaries({key}, {value}, max_size=5)"
        )
    each = [strategy(p) for p in shape[1]]
    parts = [p for p in each if p is not None]
    if len(parts) < len(each):
        return None
    return f"st.{'tuples' if kind == 'tuple' else 'one_of'}({', '.join(parts)})"


def _drawn_arguments(sig: Stated) -> list[str] | None:
    """Strategies for `sig`'s leading parameters; the rest keep their defaults.

    None when a parameter without a default has no type code can draw.
    """
    drawn: list[str] = []
    for annotation, default in zip(sig.annotations, sig.defaults, strict=True):
        shape = shape_of(annotation) if annotation else None
        made = strategy(shape) if shape is not None else None
        if made is None:
            if default is None:
                return None
            break  # this one and those after it keep their defaults
        drawn.append(made)
    return drawn


def typed_checks(
    stated: Mapping[str, Stated], task: str, constructible: Sequence[str]
) -> list[Check]:
    """One generated-input check per stated function with types, one scenario check per class.

    Only where the task states a type for some parameter or the result: an unannotated
    signature says nothing code can draw from.
    """
    watched = tuple(name for name in WATCHED if name not in task)
    if not watched:
        return []
    checks: list[Check] = []
    for qualified, sig in stated.items():
        if sig.owner or qualified[:1].isupper() or not _typed(sig):
            continue
        drawn = _drawn_arguments(sig)
        if drawn is None:
            continue
        params = ", ".join(
            f"{p}: {a}" if a else p for p, a in zip(sig.params, sig.annotations, strict=True)
        )
        label = f"{sig.name}({params}) on generated inputs: {_promise(watched, sig.returns)}"
        checks.append(_check(_function_body(sig, drawn), watched, label))
    for cls in dict.fromkeys(constructible):
        methods = [s for s in stated.values() if s.owner == cls and s.name != cls]
        ctor = stated.get(cls)
        made = _drawn_arguments(ctor) if ctor is not None else []
        usable = [(m, d) for m in methods if _typed(m) and (d := _drawn_arguments(m)) is not None]
        if made is None or not usable:
            continue
        names = ", ".join(f"{m.name}()" for m, _ in usable)
        label = f"{cls}: generated calls of {names} on one object: {_promise(watched, '')}"
        checks.append(_check(_scenario_body(cls, made, usable), watched, label))
    return checks


def _promise(watched: tuple[str, ...], returns: str) -> str:
    said = f"no {' or '.join(watched)}"
    shape = shape_of(returns) if returns else None
    if shape is not None and shape != ("none",):
        return f"{said}, and a result of type {returns}"
    return said + ("" if returns else ", and results of the stated types")


def _typed(sig: Stated) -> bool:
    return any(sig.annotations) or bool(sig.returns)


def _returns(sig: Stated) -> Shape | None:
    shape = shape_of(sig.returns) if sig.returns else None
    return None if shape is None or shape == ("none",) else shape


def _function_body(sig: Stated, drawn: list[str]) -> list[str]:
    arguments = f"st.tuples({', '.join(drawn)})"
    return [
        f"@given({arguments})",
        "def atom_types(args):",
        "    if atom_spent():",
        "        return",
        f"    atom_call({sig.name}, {sig.name + '('!r}, args, {_returns(sig)!r})",
    ]


def _scenario_body(cls: str, made: list[str], methods: list[tuple[Stated, list[str]]]) -> list[str]:
    ctor = f"st.tuples({', '.join(made)})"
    options = ", ".join(
        f"st.tuples(st.just({m.name!r}), st.tuples({', '.join(d)}))" for m, d in methods
    )
    returns = {m.name: _returns(m) for m, _ in methods}
    return [
        f"atom_returns = {returns!r}",
        f"@given({ctor}, st.lists(st.one_of({options}), max_size={MAX_CALLS}))",
        "def atom_types(made, calls):",
        "    if atom_spent():",
        "        return",
        f"    status, obj = atom_call({cls}, {cls + '('!r}, made, None)",
        "    done = [f'obj = ' + atom_shown(" + repr(cls + "(") + ", made)]",
        "    for name, args in calls:",
        "        if status != 'ok':",
        "            return",
        "        status, _ = atom_call(getattr(obj, name), 'obj.' + name + '(', args,",
        "                              atom_returns[name], done)",
        "        done.append(atom_shown('obj.' + name + '(', args))",
    ]


def _check(body: list[str], watched: tuple[str, ...], label: str) -> Check:
    return Check(
        label=label,
        call="\n".join(
            [
                *_PRELUDE.format(
                    watched=", ".join(watched) + ",", per=SECONDS_PER_CALL, budget=SECONDS_PER_CHECK
                ).splitlines(),
                *body,
                *_RUN.format(examples=MAX_EXAMPLES).splitlines(),
            ]
        ),
        expect="'holds'",
        criterion=TYPES_CRITERION,
        origin="inferred",
    )


_PRELUDE = """\
import signal, string, time
from hypothesis import HealthCheck, given, settings, strategies as st
class AtomSlow(BaseException):
    pass
def atom_slow(signum, frame):
    raise AtomSlow()
atom_watched = ({watched})
atom_started = time.monotonic()
atom_failed = []
def atom_spent():
    return time.monotonic() - atom_started > {budget}
def atom_shown(head, args):
    return head + ', '.join(repr(a)[:60] for a in args) + ')'
def atom_conforms(value, shape):
    kind = shape[0]
    if kind == 'any':
        return True
    if kind == 'none':
        return value is None
    if kind in ('int', 'bool'):
        return isinstance(value, int)
    if kind == 'float':
        return isinstance(value, (int, float))
    if kind == 'str':
        return isinstance(value, str)
    if kind in ('list', 'tuple...'):
        return (isinstance(value, (list, tuple))
                and all(atom_conforms(v, shape[1]) for v in value))
    if kind == 'set':
        return (isinstance(value, (set, frozenset))
                and all(atom_conforms(v, shape[1]) for v in value))
    if kind == 'tuple':
        return (isinstance(value, (list, tuple)) and len(value) == len(shape[1])
                and all(atom_conforms(v, s) for v, s in zip(value, shape[1])))
    if kind == 'dict':
        return isinstance(value, dict) and all(
            atom_conforms(k, shape[1]) and atom_conforms(v, shape[2]) for k, v in value.items())
    return any(atom_conforms(value, s) for s in shape[1])
def atom_call(fn, head, args, returns, done=()):
    before = signal.signal(signal.SIGALRM, atom_slow)
    error = None
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, {per}, {per})
            got = fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, before)
    except AtomSlow:
        return 'slow', None
    except BaseException as exc:
        error = exc
    shown = '; '.join([*done, atom_shown(head, args)])
    if error is not None:
        if isinstance(error, atom_watched):
            atom_failed.append(f'{{shown}} raised {{type(error).__name__}}: {{error}}'[:300])
            raise AssertionError(atom_failed[-1])
        return 'raised', None
    if returns is not None and got is not None and not atom_conforms(got, returns):
        atom_failed.append(f'{{shown}} returned {{repr(got)[:80]}}, not of the stated type')
        raise AssertionError(atom_failed[-1])
    return 'ok', got"""

_RUN = """\
atom_run = settings(max_examples={examples}, database=None, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))(atom_types)
def atom_holds(test):
    try:
        test()
    except BaseException as exc:  # the shrunk failure, or Hypothesis' report of a flaky one
        if atom_failed:
            return f'fails: {{atom_failed[-1]}}'[:300]
        return f'fails: {{type(exc).__name__}}: {{exc}}'[:300]
    return 'holds'
atom_holds(atom_run)"""
