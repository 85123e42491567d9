"""Reading Python source for the repository map: files, definitions, headers and stubs."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
import warnings
from collections.abc import Iterator
from pathlib import Path

DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
"""The statements the map lists."""

_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")


def read_module(path: Path) -> tuple[list[str], ast.Module]:
    r"""The lines of a Python file and its syntax tree.

    The lines are split on ``\n`` only, as the parser counts them (``str.splitlines`` also
    splits on form feeds and other separators, which would shift every later line number).

    Raises:
        OSError: the file cannot be read.
        SyntaxError: it does not parse (a bad encoding cookie included).
        ValueError: it holds null bytes or cannot be decoded.
        RecursionError: it nests too deeply for the parser.
    """
    source = importlib.util.decode_source(path.read_bytes())
    # Old projects are full of invalid escape sequences; their warnings are not ours to raise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source, filename=str(path))
    return source.split("\n"), tree


def walk_definitions(
    body: list[ast.stmt], prefix: str = "", in_class: bool = False
) -> Iterator[tuple[DefNode, str, str]]:
    """Every class, function and method under `body`, as (node, qualname, kind).

    Definitions inside ``if``/``try``/``with`` blocks count (version switches, optional imports);
    functions nested in functions do not: nothing outside can name them.
    """
    for node in body:
        if isinstance(node, ast.ClassDef):
            qualname = prefix + node.name
            yield node, qualname, "class"
            yield from walk_definitions(node.body, qualname + ".", True)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node, prefix + node.name, "method" if in_class else "function"
        else:
            for block in _blocks(node):
                yield from walk_definitions(block, prefix, in_class)


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    if isinstance(node, ast.Try | ast.TryStar):
        return [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]
    if isinstance(node, ast.With):
        return [node.body]
    return []


def first_line(node: DefNode) -> int:
    """The first line of a definition, its decorators included."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def docstring_node(node: DefNode) -> ast.Expr | None:
    """The docstring statement of a definition, if it has one."""
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def doc_summary(node: DefNode) -> str:
    """The first non-blank line of a definition's docstring, or ""."""
    doc = ast.get_docstring(node) or ""
    return next((line.strip() for line in doc.splitlines() if line.strip()), "")


def is_stub(node: DefNode) -> bool:
    """Whether a function's body, after its docstring, only raises NotImplementedError or passes.

    Classes are never stubs: an empty class body (``class Error(Exception): pass``) is complete.
    """
    if isinstance(node, ast.ClassDef):
        return False
    body = node.body[1:] if docstring_node(node) else node.body
    return all(_is_stub_statement(stmt) for stmt in body)


def _is_stub_statement(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        name = exc.id if isinstance(exc, ast.Name) else getattr(exc, "attr", "")
        return name == "NotImplementedError"
    return False


def header(lines: list[str], node: DefNode) -> tuple[str, int]:
    r"""A definition's header on one line without decorators or the colon, and its last line.

    ``def f(\n    a,  # why\n    b=1,\n) -> int:`` gives ``("def f(a, b=1) -> int", 4)``:
    comments dropped, whitespace collapsed, a trailing comma before a line break removed.
    """
    start = node.lineno
    stop = node.body[0].lineno if node.body else node.end_lineno or start
    text = "\n".join(lines[start - 1 : stop]).lstrip()
    try:
        return _join_tokens(text, start)
    except (tokenize.TokenError, SyntaxError):
        return _unparsed_header(node), start


def _join_tokens(text: str, start: int) -> tuple[str, int]:
    kept: list[tokenize.TokenInfo] = []
    depth = 0
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in skip:
            continue
        if tok.type == tokenize.OP and tok.string == ":" and depth == 0:
            return _spaced(kept), start + tok.start[0] - 1
        if tok.type == tokenize.OP and tok.string in _OPEN:
            depth += 1
        elif tok.type == tokenize.OP and tok.string in _CLOSE:
            depth -= 1
            # The trailing comma of an argument list laid out one per line.
            if kept and kept[-1].string == "," and kept[-1].start[0] < tok.start[0]:
                kept.pop()
        kept.append(tok)
    raise tokenize.TokenError("no colon ends the header", (0, 0))


def _spaced(tokens: list[tokenize.TokenInfo]) -> str:
    parts: list[str] = []
    previous: tokenize.TokenInfo | None = None
    for tok in tokens:
        apart = previous is not None and tok.start != previous.end
        if apart and previous is not None:
            if previous.string not in _OPEN and tok.string not in _CLOSE:
                parts.append(" ")
        parts.append(tok.string)
        previous = tok
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _unparsed_header(node: DefNode) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases]
        bases += [ast.unparse(k) for k in node.keywords]
        return f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def parameter_names(signature: str) -> set[str]:
    """The parameter names in a ``def`` signature as the map records it (empty for a class)."""
    if not signature.startswith(("def ", "async def ")):
        return set()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(signature + ": pass")
    except SyntaxError:
        return set()
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    args = func.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}
