"""Anti-hard-coding check: an AST scan of generated code for literals standing in for computation.

A model that cannot solve a step sometimes pastes the expected output into ``impl.py``: a long
string, a bytes blob, or a table of constants the tests look up. This check flags such literals
with their line numbers so the reflector can reject the attempt with a precise reason.
Docstrings are never flagged.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from atom_agent.state import IMPL_FILE

logger = logging.getLogger(__name__)

Kind = Literal["large_string", "large_bytes", "literal_table", "syntax_error"]


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """What counts as "large"; every limit is inclusive (a literal *above* it is flagged).

    Attributes:
        max_string_chars: characters of one string literal (f-strings: their constant parts).
        max_bytes: bytes of one bytes literal.
        max_items: elements of one list / tuple / set literal, or entries of a dict literal,
            made only of constants.
        max_constants: constants inside one nested literal of constants (a table of rows).
    """

    max_string_chars: int = 400
    max_bytes: int = 256
    max_items: int = 32
    max_constants: int = 64


@dataclass(frozen=True)
class Finding:
    """One suspicious literal: where it is, what it is, and why it is flagged."""

    line: int
    end_line: int
    kind: Kind
    size: int
    reason: str


@dataclass(frozen=True)
class HardcodingReport:
    """The findings of one file; ``ok`` when there are none."""

    path: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No suspicious literal (and the file parses)."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict for verdict.json."""
        return {"path": self.path, "ok": self.ok, "findings": [asdict(f) for f in self.findings]}

    def summary(self) -> str:
        """One line per finding, e.g. ``impl.py:12: large_string (1800 chars) …``."""
        if self.ok:
            return f"{self.path}: no hard-coded outputs found"
        return "\n".join(f"{self.path}:{f.line}: {f.kind}: {f.reason}" for f in self.findings)


def check_source(
    source: str, *, path: str = IMPL_FILE, thresholds: Thresholds | None = None
) -> HardcodingReport:
    """Scan Python `source` for large literals standing in for computation.

    Args:
        source: the code.
        path: the name shown in findings.
        thresholds: what counts as large (defaults: :class:`Thresholds`).

    Returns:
        The report; a file that does not parse yields one ``syntax_error`` finding.
    """
    limits = thresholds or Thresholds()
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return HardcodingReport(
            path,
            [
                Finding(
                    exc.lineno or 0,
                    exc.lineno or 0,
                    "syntax_error",
                    0,
                    f"does not parse: {exc.msg}",
                )
            ],
        )
    scanner = _Scanner(limits)
    scanner.visit(tree)
    findings = sorted(scanner.findings, key=lambda f: (f.line, f.kind))
    return HardcodingReport(path, findings)


def check_file(path: str | Path, *, thresholds: Thresholds | None = None) -> HardcodingReport:
    """:func:`check_source` on a file (decoded as UTF-8, undecodable bytes replaced)."""
    file = Path(path)
    source = file.read_bytes().decode("utf-8", errors="replace")
    return check_source(source, path=file.name, thresholds=thresholds)


class _Scanner(ast.NodeVisitor):
    def __init__(self, limits: Thresholds) -> None:
        self.limits = limits
        self.findings: list[Finding] = []
        self._docstrings: set[int] = set()

    # Docstrings: the first statement of a module, class or function, if it is a string.
    def visit_Module(self, node: ast.Module) -> None:
        self._mark_docstring(node.body)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._mark_docstring(node.body)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._mark_docstring(node.body)
        self.generic_visit(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._mark_docstring(node.body)
        self.generic_visit(node)

    def _mark_docstring(self, body: list[ast.stmt]) -> None:
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            self._docstrings.add(id(body[0].value))

    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self._docstrings:
            return
        value = node.value
        if isinstance(value, str) and len(value) > self.limits.max_string_chars:
            self._add(
                node,
                "large_string",
                len(value),
                f"string literal of {len(value)} characters (limit "
                f"{self.limits.max_string_chars}): compute the value instead of pasting it",
            )
        elif isinstance(value, bytes) and len(value) > self.limits.max_bytes:
            self._add(
                node,
                "large_bytes",
                len(value),
                f"bytes literal of {len(value)} bytes (limit {self.limits.max_bytes})",
            )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        text = sum(
            len(v.value)
            for v in node.values
            if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
        if text > self.limits.max_string_chars:
            self._add(
                node,
                "large_string",
                text,
                f"f-string with {text} literal characters (limit {self.limits.max_string_chars})",
            )
            return
        self.generic_visit(node)

    def _visit_collection(self, node: ast.List | ast.Tuple | ast.Set | ast.Dict) -> None:
        leaves = _constant_leaves(node)
        if leaves is None:  # computed parts inside: look deeper for tables within
            self.generic_visit(node)
            return
        items = len(node.keys) if isinstance(node, ast.Dict) else len(node.elts)
        kind_name = type(node).__name__.lower()
        if items > self.limits.max_items:
            self._add(
                node,
                "literal_table",
                items,
                f"{kind_name} literal of {items} constant entries (limit "
                f"{self.limits.max_items}): a lookup table standing in for computation",
            )
        elif leaves > self.limits.max_constants:
            self._add(
                node,
                "literal_table",
                leaves,
                f"nested {kind_name} literal holding {leaves} constants (limit "
                f"{self.limits.max_constants}): a lookup table standing in for computation",
            )
        else:
            self.generic_visit(node)  # small table: its strings may still be large

    visit_List = _visit_collection
    visit_Tuple = _visit_collection
    visit_Set = _visit_collection
    visit_Dict = _visit_collection

    def _add(self, node: ast.expr, kind: Kind, size: int, reason: str) -> None:
        self.findings.append(
            Finding(node.lineno, node.end_lineno or node.lineno, kind, size, reason)
        )


def _constant_leaves(node: ast.AST) -> int | None:
    """Constants in a literal made only of constants (and nested such literals), else None."""
    if isinstance(node, ast.Constant):
        return 1
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
    ):
        return 1
    children: list[ast.AST]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        children = list(node.elts)
    elif isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):  # {**other}: computed
            return None
        children = [*(k for k in node.keys if k is not None), *node.values]
    else:
        return None
    total = 0
    for child in children:
        count = _constant_leaves(child)
        if count is None:
            return None
        total += count
    return total
