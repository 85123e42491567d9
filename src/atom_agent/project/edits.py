"""Edits to a project's files: a definition replaced (or added) by the one a model wrote.

The edit format for a model that writes code, not diffs: it answers with the complete new
definition of the target (``def …`` with its body, or a class), and code splices it into the
file at the target's lines with the target's indentation, so a method comes back as a method
and the rest of the file is kept byte for byte. Small models copy a whole 2,000-line file
badly and out of their window; one definition they can write.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from atom_agent.project import _source
from atom_agent.replies import extract_code


class EditError(ValueError):
    """A reply that cannot become an edit (no code, no such definition, does not parse)."""


@dataclass(frozen=True)
class Edit:
    """A definition to put into a file: its qualified name and the source the model wrote."""

    qualname: str
    source: str


def _find(tree: ast.Module, qualname: str) -> ast.AST | None:
    """The def or class node of `qualname` (``Class.method``, nested classes dotted)."""
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in qualname.split("."):
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        found = [n for n in body if isinstance(n, kinds) and n.name == part]
        if not found:
            return None
        node = found[-1]  # the definition that wins at import time
        body = node.body if isinstance(node, ast.ClassDef) else []
    return node


def definition_of(reply: str, qualname: str) -> str:
    """The source of `qualname`'s last part as the reply defines it, dedented.

    The reply may hold the bare definition, the definition inside its class, or a whole
    module; decorators come along. Raises :class:`EditError` when there is none.
    """
    code = extract_code(reply)
    if not code.strip():
        raise EditError("the reply has no code block")
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError as exc:
        raise EditError(f"the code does not parse: line {exc.lineno}: {exc.msg}") from exc
    name = qualname.split(".")[-1]
    node = _find(tree, name) or _find(tree, qualname)
    if node is None:
        for candidate in ast.walk(tree):
            if isinstance(candidate, ast.ClassDef):
                node = _find(ast.Module(body=candidate.body, type_ignores=[]), name)
                if node is not None:
                    break
    if node is None:
        raise EditError(f"the code defines no `{name}`: write its whole definition")
    if isinstance(node, _source.DefNode) and _source.is_stub(node):
        # "# Implementation goes here / pass" replaces a stub with a stub.
        raise EditError(f"the code's `{name}` has no body (only pass, ... or a raise of "
                        "NotImplementedError): write the code that does the work")  # fmt: skip
    lines = textwrap.dedent(code).splitlines()
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])  # type: ignore[attr-defined]
    end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return textwrap.dedent("\n".join(lines[first - 1 : end])) + "\n"


def _with_docstring(source: str, old: str) -> str:
    """`source` (a dedented definition) with the docstring `old` had, when it has none.

    A model asked for a body need not copy a long docstring back (every token it writes
    costs time); the definition keeps the one it had. A docstring the model cut short (its
    text is part of the old one's: the summary line kept, the examples dropped) is replaced
    by the old one too: the project's documentation and doctests are not the model's to drop.
    """
    try:
        new_node = ast.parse(source).body[0]
        old_node = ast.parse(textwrap.dedent(old)).body[0]
    except (SyntaxError, IndexError):
        return source
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if not isinstance(new_node, kinds) or not isinstance(old_node, kinds):
        return source
    old_doc, new_doc = ast.get_docstring(old_node), ast.get_docstring(new_node)
    if old_doc is None:
        return source
    lines = source.splitlines()
    first = new_node.body[0]
    if first.lineno == new_node.lineno:  # ``def f(): return 1`` on one line: keep as is
        return source
    if new_doc is not None:
        if not _cut_short(new_doc, old_doc) or len(new_node.body) < 2:
            return source
        del lines[first.lineno - 1 : first.end_lineno or first.lineno]  # the model's docstring
        indent = " " * new_node.body[1].col_offset
    else:
        indent = " " * first.col_offset
    doc = old_node.body[0]
    old_lines = textwrap.dedent(old).splitlines()
    text = textwrap.dedent("\n".join(old_lines[doc.lineno - 1 : doc.end_lineno or doc.lineno]))
    at = first.lineno - 1
    return "\n".join([*lines[:at], textwrap.indent(text, indent), *lines[at:]]) + "\n"


def _cut_short(new: str, old: str) -> bool:
    """Whether docstring `new` is a shorter piece of `old` (whitespace aside)."""
    new_text, old_text = " ".join(new.split()), " ".join(old.split())
    return len(new_text) < len(old_text) and new_text in old_text


def source_of(text: str, qualname: str) -> str:
    """The source of `qualname` in the module `text`, dedented ('' when it is not there)."""
    try:
        node = _find(ast.parse(text), qualname)
    except SyntaxError:
        return ""
    if node is None:
        return ""
    lines = text.splitlines()
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])  # type: ignore[attr-defined]
    return textwrap.dedent("\n".join(lines[first - 1 : node.end_lineno])) + "\n"  # type: ignore[attr-defined]


def apply_edit(text: str, edit: Edit) -> str:
    """`text` (a module's source) with `edit.qualname` replaced by `edit.source`.

    A name the module does not define yet is added: at the end of its class for a method, at
    the end of the module for a function. A replacement without a docstring keeps the one the
    definition had. The result must parse.

    Raises:
        EditError: the module does not parse, the class of a new method is missing, or the
            edited module does not parse.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise EditError(f"the file does not parse: line {exc.lineno}: {exc.msg}") from exc
    lines = text.splitlines(keepends=True)
    node = _find(tree, edit.qualname)
    if node is not None:
        start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])  # type: ignore[attr-defined]
        end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        indent = " " * node.col_offset  # type: ignore[attr-defined]
    else:
        owner, _, _ = edit.qualname.rpartition(".")
        parent = _find(tree, owner) if owner else None
        if owner and parent is None:
            raise EditError(f"`{owner}` is not defined in the file: cannot add {edit.qualname}")
        if parent is None:
            start = end = len(lines) + 1
            indent = ""
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append("\n\n")
            start = end = len(lines) + 1
        else:
            start = end = (parent.end_lineno or parent.lineno) + 1  # type: ignore[attr-defined]
            body = parent.body[0]  # type: ignore[attr-defined]
            indent = " " * body.col_offset
        end -= 1  # an insertion replaces nothing
    source = textwrap.dedent(edit.source)
    if node is not None:
        source = _with_docstring(source, "".join(lines[start - 1 : end]))
    new = textwrap.indent(source.rstrip("\n") + "\n", indent)
    new = "\n".join(ln if ln.strip() else "" for ln in new.split("\n"))
    if node is None and parent_needs_blank(lines, start):
        new = "\n" + new
    out = "".join(lines[: start - 1]) + new + "".join(lines[end:])
    try:
        ast.parse(out)
    except SyntaxError as exc:
        raise EditError(f"the edited file does not parse: line {exc.lineno}: {exc.msg}") from exc
    return out


def parent_needs_blank(lines: list[str], start: int) -> bool:
    """True when the line before an insertion point is not blank (PEP 8 spacing)."""
    return start >= 2 and bool(lines[start - 2].strip())
