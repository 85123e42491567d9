"""Quick checks of Python source the model just wrote: syntax errors and empty functions.

A small model's most common dead ends are a file that does not parse and a function it copied
from the task with only its docstring (it returns None). Both are cheap to see statically, and
seeing them in the result of the write that caused them saves a whole test run and attempt.
"""

from __future__ import annotations

import ast

_SKIP_DECORATORS = frozenset({"abstractmethod", "overload", "abstractproperty"})


def python_problems(source: str) -> list[str]:
    """What is plainly wrong with `source`: a syntax error, or functions without a body.

    A function "without a body" has nothing but a docstring, ``pass`` or ``...``; abstract
    methods and ``@overload`` signatures are exempt, as are classes' Protocol members.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "somewhere"
        text = (exc.text or "").strip()
        shown = f": {text[:120]}" if text else ""
        return [f"syntax error at {where}: {exc.msg}{shown}"]
    empty = [node.name for node in _functions(tree) if _is_stub(node)]
    return [
        f"{name}() has no body yet (only a docstring, pass or ...): it returns None; "
        "write the code that computes its result"
        for name in empty
    ]


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node)
        elif isinstance(node, ast.ClassDef) and not _is_protocol(node):
            found.extend(
                n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return found


def _is_protocol(node: ast.ClassDef) -> bool:
    names = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    return bool(names & {"Protocol", "ABC"})


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    decorators = {
        d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in node.decorator_list
    }
    if decorators & _SKIP_DECORATORS:
        return False
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
    return all(
        isinstance(stmt, ast.Pass)
        or (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and stmt.value.value is Ellipsis
        )
        for stmt in body
    )
