"""The numbered excerpt of a module around one definition, cut to a token budget."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from atom_agent.project import _source

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DOC_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_DOC_QUOTED = re.compile(r"`+(?:[\w.]*\.)?([A-Za-z_]\w*)(?:\(\))?`+")
_SELF_CALL = re.compile(r"\bself\.([A-Za-z_]\w*)\s*\(")
_QUOTES_ONLY = re.compile(r"[rRbBuU]{0,2}(\"\"\"|''')\s*\Z")

Lines = frozenset[int]


def excerpt_lines(path: Path, qualname: str, lineno: int, budget: int) -> str:
    """The excerpt `repomap.excerpt` documents, for the definition `qualname` at `lineno`.

    The file is as the map read it: it parses and defines `qualname`.
    """
    lines, tree = _source.read_module(path)
    node, owner = _locate(tree, qualname, lineno)
    target = _span(node)
    if owner is not None and not isinstance(node, ast.ClassDef):
        parts = _method_parts(lines, tree, owner, node)
    else:
        parts = _module_parts(lines, tree, node)
    chosen = target
    # Parts come most important first; one that does not fit is left out, smaller ones may fit.
    # A target over budget alone takes no part, and is never cut.
    for part in parts:
        trial = chosen | part
        if trial != chosen and _tokens(_render(lines, trial)) <= budget:
            chosen = trial
    return _render(lines, chosen)


def _locate(
    tree: ast.Module, qualname: str, lineno: int
) -> tuple[_source.DefNode, ast.ClassDef | None]:
    """The definition's node and the class it is a method of, preferring the recorded line."""
    by_name = {q: node for node, q, _ in _source.walk_definitions(tree.body)}
    matches = [node for node, q, _ in _source.walk_definitions(tree.body) if q == qualname]
    node = next((n for n in matches if _source.first_line(n) == lineno), matches[0])
    owner = by_name.get(qualname.rpartition(".")[0]) if "." in qualname else None
    return node, owner if isinstance(owner, ast.ClassDef) else None


def _span(node: ast.stmt) -> Lines:
    start = _source.first_line(node) if isinstance(node, _source.DefNode) else node.lineno
    return frozenset(range(start, (node.end_lineno or node.lineno) + 1))


def _summary(lines: list[str], node: _source.DefNode) -> Lines:
    """Decorators, header and the first line of the docstring."""
    _, header_end = _source.header(lines, node)
    shown = set(range(_source.first_line(node), header_end + 1))
    doc = _source.docstring_node(node)
    if doc is not None:
        shown.add(doc.lineno)
        if _QUOTES_ONLY.match(lines[doc.lineno - 1].strip()) and doc.lineno < len(lines):
            shown.add(doc.lineno + 1)  # the text starts on the line after the quotes
    return frozenset(shown)


def _class_head(lines: list[str], node: ast.ClassDef) -> Lines:
    _, header_end = _source.header(lines, node)
    return frozenset(range(_source.first_line(node), header_end + 1))


def _method_parts(
    lines: list[str], tree: ast.Module, owner: ast.ClassDef, target: _source.DefNode
) -> list[Lines]:
    text = "\n".join(lines[n - 1] for n in sorted(_span(target)))
    head = _class_head(lines, owner)
    if (doc := _source.docstring_node(owner)) is not None:
        head |= _span(doc)
    assignments = [
        _span(stmt) for stmt in owner.body if isinstance(stmt, ast.Assign | ast.AnnAssign)
    ]
    methods = {
        stmt.name: stmt
        for stmt in owner.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt is not target
    }
    init = [_span(methods["__init__"])] if "__init__" in methods else []
    # Helper classes defined in the class body (a linked list's node) are its bookkeeping.
    nested = [_span(stmt) for stmt in owner.body if isinstance(stmt, ast.ClassDef)]
    called = dict.fromkeys(_SELF_CALL.findall(text))
    calls = [_span(methods[name]) for name in called if name in methods]
    # Nearest first: the neighbours of a method usually share its bookkeeping.
    # Methods of base classes defined in the same module are the rest of `self`'s interface.
    classes = {stmt.name: stmt for stmt in tree.body if isinstance(stmt, ast.ClassDef)}
    bases = [classes[b.id] for b in owner.bases if isinstance(b, ast.Name) and b.id in classes]
    inherited = [
        _summary(lines, stmt) | _class_head(lines, base)
        for base in bases
        if base is not owner
        for stmt in base.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name not in methods
    ]
    others = sorted(methods.values(), key=lambda m: abs(m.lineno - target.lineno))
    # The same method written for another class of the module (another type's convert): how
    # this project does that job. Not one built on private attributes (``self.__order``) this
    # class lacks: a small model copies it, and it fails on the first call.
    analogues = [
        _class_head(lines, cls) | _span(stmt)
        for cls in classes.values()
        if cls is not owner
        for stmt in cls.body
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
        and stmt.name == target.name
        and not _source.is_stub(stmt)
        and _private(stmt) <= _private(owner)
    ]
    return [
        head,
        *assignments,
        *init,
        *calls,
        *nested,
        *analogues[:2],
        *_callers(tree, target)[:2],
        *(_summary(lines, m) for m in others),
        *inherited,
        *_module_parts(lines, tree, target),
        *(_span(m) for m in others),
    ]


def _module_parts(lines: list[str], tree: ast.Module, target: _source.DefNode) -> list[Lines]:
    """Imports, then the module-level names the target mentions (docstring included)."""
    order = _mentioned_names(target)
    imports: list[Lines] = []
    constants: list[tuple[int, Lines]] = []
    definitions: list[tuple[int, _source.DefNode]] = []
    for stmt in tree.body:
        if _is_import(stmt):
            imports.append(_span(stmt))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            named = [order[n] for n in _assigned(stmt) if n in order]
            if named:
                constants.append((min(named), _span(stmt)))
        elif isinstance(stmt, _source.DefNode) and stmt is not target and stmt.name in order:
            definitions.append((order[stmt.name], stmt))
    constants.sort(key=lambda pair: pair[0])
    definitions.sort(key=lambda pair: pair[0])
    return [
        *imports,
        *(lines_ for _, lines_ in constants),
        *_callers(tree, target)[:2],
        *(_summary(lines, d) for _, d in definitions),
        *(_span(d) for _, d in definitions),
    ]


def _private(node: ast.AST) -> set[str]:
    """The private attributes (``self.__name``, name-mangled per class) `node` uses."""
    return {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
        and sub.attr.startswith("__")
        and not sub.attr.endswith("__")
    }


def _callers(tree: ast.Module, target: _source.DefNode) -> list[Lines]:
    """The functions and methods of the module that call the target, shortest first.

    How the code around it uses what the target returns (a stub says nothing of that).
    """
    found: list[Lines] = []
    for node, _, _ in _source.walk_definitions(tree.body):
        if node is target or isinstance(node, ast.ClassDef):
            continue
        if any(
            isinstance(sub, ast.Call)
            and (
                (isinstance(sub.func, ast.Name) and sub.func.id == target.name)
                or (isinstance(sub.func, ast.Attribute) and sub.func.attr == target.name)
            )
            for sub in ast.walk(node)
        ):
            found.append(_span(node))
    return sorted(found, key=len)


def _mentioned_names(node: _source.DefNode) -> dict[str, int]:
    """The names a definition uses, each with the line it first uses it on.

    Its code counts, and of its docstring only what reads as code: doctest lines, ``name(``
    calls and backticked names. Prose words would match classes named like words (``If``).
    """
    found: dict[str, int] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found[sub.id] = min(found.get(sub.id, sub.lineno), sub.lineno)
    doc = _source.docstring_node(node)
    if doc is not None and isinstance(doc.value, ast.Constant):
        for offset, line in enumerate(str(doc.value.value).split("\n")):
            code = line.strip()
            if code.startswith((">>>", "...")):
                names = _IDENTIFIER.findall(code)
            else:
                names = _DOC_CALL.findall(line) + _DOC_QUOTED.findall(line)
            for name in names:
                found.setdefault(name, doc.lineno + offset)
    return found


def _is_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    # `try: import x` / `except ImportError:` and `if TYPE_CHECKING: import y` are imports too.
    if isinstance(stmt, ast.Try | ast.If):
        return bool(stmt.body) and all(_is_import(s) for s in stmt.body)
    return False


def _assigned(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _render(lines: list[str], chosen: Lines) -> str:
    out: list[str] = []
    previous = 0
    for number in sorted(chosen):
        if previous and number != previous + 1:
            out.append(f"{'⋮':>5}|")
        out.append(f"{number:>5}| {lines[number - 1]}".rstrip())
        previous = number
    return "\n".join(out)


def _tokens(text: str) -> int:
    return len(text) // 4
