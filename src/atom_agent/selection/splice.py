"""Splicing one function of a module into another: the recombination's surgery.

:func:`functions_of` names a module's functions and methods (``f``, ``C.m``);
:func:`pointed_at` says which of them a failed check exercises (the innermost frame in the
module under test, else what the check's expression calls last); :func:`splice` replaces one
of them by another module's function of that name, bringing its new imports and helpers.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Collection, Sequence

from atom_agent.checks.contract import CheckResult
from atom_agent.replies import after_header

OPERATORS: dict[type[ast.AST], str] = {
    ast.Add: "__add__",
    ast.Sub: "__sub__",
    ast.Mult: "__mul__",
    ast.MatMult: "__matmul__",
    ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__",
    ast.Mod: "__mod__",
    ast.Pow: "__pow__",
}
COMPARISONS: dict[type[ast.AST], str] = {ast.Eq: "__eq__", ast.Lt: "__lt__", ast.In: "__contains__"}


def functions_of(source: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module's functions and methods by qualified name (``f``, ``C.m``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}.{item.name}"] = item
    return found


def pointed_at(result: CheckResult, functions: Collection[str]) -> str | None:
    """The function `result` implicates: where it raised, else what its expression calls last."""
    if result.function:
        name = result.function.split(".<locals>")[0]
        if name in functions:
            return name
    try:
        tree = ast.parse(result.check.call.strip())
    except (SyntaxError, ValueError):
        return None
    last = tree.body[-1] if tree.body else None
    found = _operation(last.value, functions) if isinstance(last, ast.Expr) else None
    return found or _outermost(tree, functions)


def _outermost(tree: ast.AST, functions: Collection[str]) -> str | None:
    """The one module function the check calls outside any other such call.

    A property check (``assert decode(encode(s)) == s`` inside a Hypothesis test) compares
    what its outermost call returns: that function is the one to rewrite.
    """
    found: set[str] = set()

    def visit(node: ast.AST, inside: bool) -> None:
        called = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in functions
        )
        if called and not inside:
            found.add(node.func.id)  # type: ignore[attr-defined]
        for child in ast.iter_child_nodes(node):
            visit(child, inside or called)

    visit(tree, False)
    return found.pop() if len(found) == 1 else None


def _operation(node: ast.expr, functions: Collection[str]) -> str | None:
    """The function or method that computes `node`'s value (its outermost operation)."""
    wanted: str | None = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name == "len" and name not in functions:
            wanted = "__len__"
        elif name in functions:
            return name
        else:  # a class called: its constructor
            return f"{name}.__init__" if f"{name}.__init__" in functions else None
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        wanted = node.func.attr
    elif isinstance(node, ast.Attribute):
        wanted = node.attr
    elif isinstance(node, ast.BinOp):
        wanted = OPERATORS.get(type(node.op))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        wanted = COMPARISONS.get(type(node.ops[0]))
    if not wanted:
        return None
    owners = [f for f in functions if f.rpartition(".")[2] == wanted and "." in f]
    return owners[0] if len(owners) == 1 else None


def splice(source: str, target: str, reply_code: str) -> str | None:
    """`source` with `target` replaced by the reply's function of that name (None: no such)."""
    try:
        reply = ast.parse(reply_code)
    except (SyntaxError, ValueError):
        return None
    name = target.rpartition(".")[2]
    new = _find(reply, name)
    old = functions_of(source).get(target)
    if new is None or old is None:
        return None
    reply_lines = reply_code.splitlines(keepends=True)
    start = min([d.lineno for d in new.decorator_list] + [new.lineno]) - 1
    text = textwrap.dedent("".join(reply_lines[start : new.end_lineno]))
    indent = " " * old.col_offset
    body = textwrap.indent(text, indent, lambda line: bool(line.strip()))
    lines = source.splitlines(keepends=True)
    old_start = min([d.lineno for d in old.decorator_list] + [old.lineno]) - 1
    if not body.endswith("\n"):
        body += "\n"
    spliced = lines[:old_start] + [body] + lines[old.end_lineno :]
    joined = _with_additions("".join(spliced), reply, reply_lines, name, source)
    try:
        ast.parse(joined)
    except (SyntaxError, ValueError):
        return None
    return joined


def _find(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
                    return item
    return None


def _with_additions(
    module: str, reply: ast.Module, reply_lines: Sequence[str], name: str, original: str
) -> str:
    """`module` with the reply's new imports at the top and new helper functions at the end."""
    try:
        present = ast.parse(original)
    except (SyntaxError, ValueError):
        return module
    had = {ast.unparse(n) for n in present.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    defined = {
        n.name
        for n in present.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    imports = [
        ast.unparse(n) + "\n"
        for n in reply.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and ast.unparse(n) not in had
        and not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
    ]
    helpers = [
        "".join(reply_lines[n.lineno - 1 : n.end_lineno])
        for n in reply.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.name != name
        and n.name not in defined
    ]
    head = after_header(present)
    lines = module.splitlines(keepends=True)
    out = lines[:head] + imports + lines[head:]
    text = "".join(out)
    if helpers:
        text = text.rstrip("\n") + "\n\n\n" + "\n\n".join(h.rstrip("\n") + "\n" for h in helpers)
    return text
