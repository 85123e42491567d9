"""Edits to a project's files: a definition replaced by the one a model wrote, or added.

The edit format for a model that writes code, not diffs: it answers with the complete new
definition of the target (``def …`` with its body, or a class), and code splices it into the
file at the target's lines with the target's indentation, so a method comes back as a method
and the rest of the file is kept byte for byte. Small models copy a whole 2,000-line file
badly and out of their window; one definition they can write. A definition the file does not
have yet (a task that asks to add one) goes at the end of the module or of its class.
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


def _find(tree: ast.Module, qualname: str) -> _source.DefNode | None:
    """The def or class node of `qualname` (``Class.method``, nested classes dotted)."""
    body: list[ast.stmt] = tree.body
    node: _source.DefNode | None = None
    for part in qualname.split("."):
        found = [n for n in body if isinstance(n, _source.DefNode) and n.name == part]
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
    if _source.is_stub(node):
        # "# Implementation goes here / pass" replaces a stub with a stub.
        raise EditError(f"the code's `{name}` has no body (only pass, ... or a raise of "
                        "NotImplementedError): write the code that does the work")  # fmt: skip
    lines = textwrap.dedent(code).splitlines()
    end = node.end_lineno or node.lineno
    return textwrap.dedent("\n".join(lines[_source.first_line(node) - 1 : end])) + "\n"


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


def apply_edit(text: str, edit: Edit) -> str:
    """`text` (a module's source) with `edit.qualname` replaced by `edit.source`.

    A replacement without a docstring keeps the one the definition had. A name the module does
    not define yet is added (:func:`_added`). The result must parse.

    Raises:
        EditError: the module does not parse, a new method's class is not in it, or the edited
            module does not parse.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise EditError(f"the file does not parse: line {exc.lineno}: {exc.msg}") from exc
    lines = text.splitlines(keepends=True)
    node = _find(tree, edit.qualname)
    if node is None:
        return _added(text, tree, edit)
    start, end = _source.first_line(node), node.end_lineno or node.lineno
    source = _with_docstring(textwrap.dedent(edit.source), "".join(lines[start - 1 : end]))
    new = textwrap.indent(source.rstrip("\n") + "\n", " " * node.col_offset)
    new = "\n".join(ln if ln.strip() else "" for ln in new.split("\n"))
    return _parsed("".join(lines[: start - 1]) + new + "".join(lines[end:]))


def _added(text: str, tree: ast.Module, edit: Edit) -> str:
    """`text` with the new definition `edit.source` at the end of the module or of its class.

    A function goes after everything else, two blank lines before it; a method (``Class.name``)
    after the last statement of its class, indented as the class's body.
    """
    owner = edit.qualname.rpartition(".")[0]
    source = textwrap.dedent(edit.source).strip("\n") + "\n"
    if not owner:
        out = text.rstrip("\n") + ("\n\n\n" if text.strip() else "") + source
        return _parsed(out)
    cls = _find(tree, owner)
    if not isinstance(cls, ast.ClassDef):
        raise EditError(f"`{owner}` is not a class of the file: `{edit.qualname}` has no place")
    lines = text.splitlines(keepends=True)
    end = cls.end_lineno or cls.lineno
    indent = " " * (cls.body[0].col_offset if cls.body else cls.col_offset + 4)
    body = textwrap.indent(source, indent)
    body = "\n".join(ln if ln.strip() else "" for ln in body.split("\n"))
    head = "".join(lines[:end])
    head += "" if head.endswith("\n") else "\n"
    return _parsed(head + "\n" + body + "".join(lines[end:]))


def _parsed(out: str) -> str:
    """`out` when it parses (else :class:`EditError`)."""
    try:
        ast.parse(out)
    except SyntaxError as exc:
        raise EditError(f"the edited file does not parse: line {exc.lineno}: {exc.msg}") from exc
    return out
