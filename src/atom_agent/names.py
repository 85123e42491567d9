"""Which public functions and classes a text names or a piece of code defines (pure, no I/O).

Plans, contracts and drafts are validated by code against these names: a check must call
something its step defines, a step must define something new, a task that names one function
or class is one step.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re

_DEF = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)")
_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_BACKTICKED = re.compile(r"`([A-Za-z_]\w*)(?:\(|`)")
_CLASS_WORD = re.compile(r"\b(?:an?|the)\s+([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\s+class\b")
_CLASS_WORD_AFTER = re.compile(r"\bclass\s+(?:called\s+|named\s+)?`?([A-Z][A-Za-z0-9_]*)")
_FENCE = re.compile(r"```(?:python|py)?[^\n]*\n(.*?)```", re.DOTALL)
_EXCEPTION_CLASS = re.compile(
    r"\b([A-Z][A-Za-z0-9_]*)\s*[(,]\s*(?:an?\s+)?(?:custom\s+|new\s+|own\s+)?exception\b"
)

_NOT_NAMES = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {
    "e", "i", "eg", "ie", "etc", "self", "cls", "impl", "test", "tests", "pytest",
}  # fmt: skip


def is_public(name: str) -> bool:
    """A name a user would call: an identifier, not private, not a builtin or keyword."""
    return name.isidentifier() and not name.startswith("_") and name not in _NOT_NAMES


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a markdown-ish text."""
    return _FENCE.findall(text or "")


def defined_in_code(source: str) -> list[str]:
    """Top-level functions and classes `source` defines, in order (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and is_public(node.name)
    ]


def named_in_text(text: str) -> list[str]:
    """Functions and classes a task or step description names, in order of first mention.

    ``def f``/``class C``, calls written as ``f(x)`` or ``f(x: int) -> str``, backticked
    names, and "a Polygon class". Builtins, keywords and names seen only as attributes
    (``self.x(``, ``re.sub(``) are left out.
    """
    found: dict[str, None] = {}
    text = text or ""
    params = parameters_in_text(text)
    for pattern in (_DEF, _CLASS_WORD, _CLASS_WORD_AFTER, _EXCEPTION_CLASS, _CALLED, _BACKTICKED):
        for match in pattern.finditer(text):
            name = match.group(1)
            if pattern is _DEF and match.group(0).startswith("class") and not name[:1].isupper():
                continue  # "a LineEditor class that keeps …": prose, not `class that`
            if pattern is _BACKTICKED and name in params and match.group(0).endswith("`"):
                continue  # "lines of at most `width` characters": a parameter, not a unit
            if is_public(name) and not name.isupper():
                found.setdefault(name, None)
    # Keep the order of first mention in the text.
    return sorted(found, key=lambda n: _first_index(text, n))


def parameters_in_text(text: str) -> set[str]:
    """The parameter names of the signatures `text` writes out (``f(text: str, width: int)``).

    A call whose arguments parse as a ``def`` header's parameters is a signature; one with
    literal arguments (``f('a b', 3)``) is an example and names no parameter.
    """
    params: set[str] = set()
    for match in _CALLED.finditer(text):
        close = closing_paren(text, match.end() - 1)
        if close is None:
            continue
        inner = text[match.end() : close]
        if has_literal_args(inner):
            continue
        try:
            node = ast.parse(f"def f({inner}): pass").body[0]
        except (SyntaxError, ValueError):
            continue
        if isinstance(node, ast.FunctionDef):
            a = node.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
            params.update(arg.arg for arg in every)
    return params


def has_literal_args(inner: str) -> bool:
    """``f('x', 3)`` is an example call, not a signature (`inner`: what its parentheses hold)."""
    return bool(re.match(r"\s*(?:['\"\d\[\(\{-])", inner))


def closing_paren(text: str, open_at: int) -> int | None:
    """The index of the parenthesis closing the one at `open_at` (None if it is not closed)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _first_index(text: str, name: str) -> int:
    match = re.search(rf"(?<![\w.]){re.escape(name)}\b", text)
    return match.start() if match else len(text)


def called_names(source: str) -> list[str]:
    """Names called as plain functions in `source` (``f(...)``, not ``x.f(...)``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.setdefault(node.func.id, None)
    return list(names)


def free_names(source: str) -> list[str]:
    """Names `source` reads that it does not bind itself and that are not builtins."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    bound: set[str] = set()
    read: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store | ast.Del):
                bound.add(node.id)
            else:
                read.setdefault(node.id, None)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return [n for n in read if n not in bound and n not in dir(builtins)]


def without_shorthands(names: list[str]) -> list[str]:
    """`names` without shorthands of longer names (``decode`` beside ``hex_decode``).

    Tasks write properties in short (``decode(encode(b)) == b``); a shorthand is not something
    to define, and a check of it could never pass.
    """
    return [n for n in names if shorthand_of(n, names) is None]


def shorthand_of(name: str, names: list[str]) -> str | None:
    """The one longer name in `names` that ends in ``_<name>`` (None if none or several)."""
    longer = [n for n in names if n != name and n.endswith(f"_{name}")]
    return longer[0] if len(longer) == 1 else None


STANDALONE = r"\bdef\s+{n}\b|\bfunctions?\s+`?{n}\b|\b{n}\s*\([^)]*\)`?\s+function\b"
"""How a task says that a lowercase name beside a class is a function of its own."""


def owner_class(text: str, at: int, name: str, classes: list[str]) -> str:
    """The class whose method `name` (mentioned at `at` in `text`) is, or '' for a function.

    The last of `classes` mentioned before it, unless the text calls `name` a function.
    """
    if not classes or name[:1].isupper():
        return ""
    if re.search(STANDALONE.format(n=re.escape(name)), text):
        return ""
    # An exception class a task asks for holds no methods of its own.
    declared = {m.group(1) for m in _EXCEPTION_CLASS.finditer(text)}
    classes = [c for c in classes if c not in declared and not c.endswith(("Error", "Exception"))]
    before = text[:at]
    mentions = [(before.rfind(c), c) for c in classes if re.search(rf"\b{re.escape(c)}\b", before)]
    return max(mentions)[1] if mentions else ""


def without_methods(text: str, names: list[str]) -> list[str]:
    """`names` without the methods of the classes among them (they are defined inside those)."""
    classes = [n for n in names if n[:1].isupper()]
    return [n for n in names if not owner_class(text, _first_index(text, n), n, classes)]
