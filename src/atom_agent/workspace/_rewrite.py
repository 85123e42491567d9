"""Rewrite how step code imports itself and its dependencies into plain package imports (ast).

In a run, a step's files import their own module as ``impl`` (``from impl import f``) and a
dependency's as ``deps.<step>.impl`` (``from deps.a.impl import f``, ``import deps.a.impl as
m``, ``from deps.a import impl``). In the deliverable every step is a module of one package, so
those names become ``<package>.<module>``. Statements are located with :mod:`ast` and replaced
by their source span, so comments and formatting elsewhere in the file stay as they were.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

DEPS = "deps"


@dataclass
class ImportMap:
    """Where a run-time module name lives in the package.

    Attributes:
        local: the step's own modules by their run-time name (``impl`` → ``pkg.adder``).
        deps: dependency modules by ``(step ident, file stem)`` (``("adder", "impl")`` →
            ``pkg.adder``), for ``deps.<ident>.<stem>``.
    """

    local: dict[str, str] = field(default_factory=dict)
    deps: dict[tuple[str, str], str] = field(default_factory=dict)

    def target(self, dotted: str) -> str | None:
        """The package module for a run-time dotted module name, or None if it is not ours."""
        parts = dotted.split(".")
        if len(parts) == 1:
            return self.local.get(parts[0])
        if len(parts) == 3 and parts[0] == DEPS:
            return self.deps.get((parts[1], parts[2]))
        return None


@dataclass
class Rewritten:
    """A rewritten source file and what could not be rewritten."""

    source: str
    problems: list[str] = field(default_factory=list)


def rewrite_imports(source: str, mapping: ImportMap, *, filename: str = "<file>") -> Rewritten:
    """`source` with every import of step code replaced by the package import.

    Handles ``import impl``, ``import impl as m``, ``from impl import f``, ``import deps.a.impl``
    (and the ``deps.a.impl.f`` attribute chains that use it), ``import deps.a.impl as m``,
    ``from deps.a.impl import f, g as h``, ``from deps.a import impl [as m]``, at any nesting
    level (inside functions, ``try`` blocks). Forms that cannot be mapped to one module
    (``import deps``, ``from deps import a``) are reported in ``problems`` and left alone.

    Raises:
        SyntaxError: `source` does not parse.
    """
    tree = ast.parse(source, filename=filename)
    data = source.encode("utf-8")
    edits: list[tuple[int, int, str]] = []
    problems: list[str] = []
    plain: dict[str, str] = {}  # ``deps.a.impl`` imported without alias → its package module
    offsets = _line_offsets(data)

    def span(node: ast.AST) -> tuple[int, int]:
        start = offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            parts, changed = [], False
            for alias in node.names:
                target = mapping.target(alias.name)
                if target is None:
                    if alias.name == DEPS or alias.name.startswith(DEPS + "."):
                        problems.append(f"{filename}:{node.lineno}: `import {alias.name}` is not a "
                                        "module of the package; left as it was")  # fmt: skip
                    parts.append(_alias(alias.name, alias.asname))
                    continue
                changed = True
                if alias.asname:
                    parts.append(f"{target} as {alias.asname}")
                elif "." in alias.name:  # `import deps.a.impl`: its uses are rewritten below
                    plain[alias.name] = target
                    parts.append(target)
                else:  # `import impl`: keep the name the code uses
                    parts.append(f"{target} as {alias.name}")
            if changed:
                edits.append((*span(node), "import " + ", ".join(parts)))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            text = _import_from(node, mapping, filename, problems)
            if text is not None:
                edits.append((*span(node), text))
    if plain:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _dotted(node) in plain:
                edits.append((*span(node), plain[_dotted(node)]))
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode("utf-8") + data[end:]
    return Rewritten(data.decode("utf-8"), problems)


def _import_from(
    node: ast.ImportFrom, mapping: ImportMap, filename: str, problems: list[str]
) -> str | None:
    """The replacement of a ``from M import …`` statement, or None to keep it."""
    module = node.module or ""
    target = mapping.target(module)
    if target is not None:
        names = ", ".join(_alias(a.name, a.asname) for a in node.names)
        return f"from {target} import {names}"
    parts = module.split(".")
    if parts[0] != DEPS:
        return None
    if len(parts) == 2:  # from deps.a import impl [as m]
        imported = []
        for alias in node.names:
            sub = mapping.target(f"{module}.{alias.name}")
            if sub is None:
                problems.append(f"{filename}:{node.lineno}: `from {module} import {alias.name}` "
                                "names no module of the package; left as it was")  # fmt: skip
                return None
            package, _, name = sub.rpartition(".")
            imported.append((package, _alias(name, alias.asname or alias.name)))
        if len({p for p, _ in imported}) == 1:
            return f"from {imported[0][0]} import " + ", ".join(n for _, n in imported)
    problems.append(
        f"{filename}:{node.lineno}: `from {module} import …` is not a module of the package; "
        "left as it was"
    )
    return None


def _alias(name: str, asname: str | None) -> str:
    return f"{name} as {asname}" if asname and asname != name else name


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for an attribute chain over a name ('' for anything else)."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(names)])


def _line_offsets(data: bytes) -> list[int]:
    """Byte offset of each line's start (ast columns are UTF-8 byte offsets)."""
    offsets = [0]
    for line in data.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets
