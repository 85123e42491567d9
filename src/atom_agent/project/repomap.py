"""The read-only map of a project: its definitions, the ones a task names, and their context."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from atom_agent.project import _source
from atom_agent.project._excerpt import excerpt_lines

logger = logging.getLogger(__name__)

# Hidden folders (.git, .tox, .venv, .mypy_cache) are skipped by their leading dot.
_SKIP_DIRS = frozenset(
    {"__pycache__", "venv", "env", "site-packages", "build", "dist", "node_modules"}
)
_TEST_DIRS = frozenset({"tests", "test"})
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_STOP_WORDS = frozenset({"get", "set", "new", "init", "call", "str", "repr", "self", "cls"})


@dataclass(frozen=True)
class Definition:
    """One class, function or method of the project, where it is and what it looks like."""

    path: str
    """Relative posix path from the project root, e.g. ``geo/shapes.py``."""
    module: str
    """Dotted module: ``src/pkg/x.py`` is ``pkg.x``, ``pkg/__init__.py`` is ``pkg``."""
    qualname: str
    """Name inside the module, classes dotted: ``area_of``, ``Circle.scale``."""
    kind: str
    """``function``, ``class`` or ``method``."""
    signature: str
    """The header on one line, without decorators or colon: ``class LruCache(Cache)``."""
    lineno: int
    """First line, decorators included (1-based)."""
    end_lineno: int
    """Last line."""
    doc: str
    """First line of the docstring, "" if none."""
    stub: bool
    """The body after the docstring only raises NotImplementedError, passes or is ``...``."""
    test: bool = False
    """Defined in a test file (``test_*.py``, ``*_test.py``, ``conftest.py``, a tests folder)."""
    new: bool = False
    """Not in the project yet: a definition the task asks to add (``lineno`` is 0)."""

    @property
    def dotted(self) -> str:
        """The full dotted name, module and qualname."""
        return f"{self.module}.{self.qualname}" if self.module else self.qualname


def scan(root: Path, *, max_files: int = 2000, max_bytes: int = 2_000_000) -> list[Definition]:
    """Every definition in the project's Python files, file by file in path order.

    Hidden folders, caches, virtualenvs and build output are skipped, and so are files larger
    than `max_bytes` or that do not parse (logged, not fatal); at most `max_files` files are read.
    Symbolic links are not followed into folders, nor to files outside `root`.
    """
    root = root.resolve()
    found: list[Definition] = []
    for count, path in enumerate(python_files(root)):
        if count >= max_files:
            logger.warning("repository map stops at %d files under %s", max_files, root)
            break
        found.extend(scan_file(root, path, max_bytes))
    return found


def python_files(root: Path) -> Iterator[Path]:
    """The Python files under `root` (resolved), folder by folder in name order.

    Hidden folders, caches, virtualenvs and build output are skipped; so are symbolic links
    to files outside `root`.
    """
    # os.walk does not descend into symlinked folders (followlinks=False): no loops, no escapes.
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(name for name in dirnames if not _skipped_dir(here / name))
        for name in sorted(filenames):
            path = here / name
            if not name.endswith(".py") or not path.is_file():
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                continue
            yield path


def _skipped_dir(path: Path) -> bool:
    name = path.name
    return (
        name.startswith(".")
        or name in _SKIP_DIRS
        or name.endswith(".egg-info")
        or (path / "pyvenv.cfg").is_file()  # a virtualenv under any name
    )


def scan_file(root: Path, path: Path, max_bytes: int = 2_000_000) -> list[Definition]:
    """The definitions of one Python file under `root` (none: too big, or it does not parse)."""
    rel = path.relative_to(root).as_posix()
    try:
        if path.stat().st_size > max_bytes:
            logger.info("repository map skips %s: larger than %d bytes", rel, max_bytes)
            return []
        lines, tree = _source.read_module(path)
    except (OSError, SyntaxError, ValueError, RecursionError) as exc:
        logger.info("repository map skips %s: %s", rel, exc)
        return []
    module, test = module_name(rel), is_test_path(rel)
    found = []
    for node, qualname, kind in _source.walk_definitions(tree.body):
        signature, _ = _source.header(lines, node)
        found.append(
            Definition(
                path=rel,
                module=module,
                qualname=qualname,
                kind=kind,
                signature=signature,
                lineno=_source.first_line(node),
                end_lineno=node.end_lineno or node.lineno,
                doc=_source.doc_summary(node),
                stub=_source.is_stub(node),
                test=test,
            )
        )
    return found


def module_name(rel: str) -> str:
    """The dotted module of a relative path: ``src/pkg/x.py`` is ``pkg.x``."""
    parts = rel.removesuffix(".py").split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_test_path(rel: str) -> bool:
    """Whether a relative path is a test file (``test_*.py``, a tests folder, ``conftest.py``)."""
    *folders, name = rel.split("/")
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(folder in _TEST_DIRS for folder in folders)
    )


def find(defs: list[Definition], name: str) -> list[Definition]:
    """The definitions `name` can mean, the best first.

    `name` is written as a user writes it: ``area_of``, ``shapes.area_of``,
    ``geo.shapes.area_of``, ``Circle.scale``, ``geo.Circle.scale`` (a package
    re-exporting ``geo.shapes.Circle``), ``self.fail`` (a method), with or without ``(args)``.
    The longest suffix of module + qualname that matches wins; non-test definitions come before
    test ones, then those whose qualname (or dotted name) is exactly `name`.
    """
    return [d for _, d in _ranked(defs, name)]


def _ranked(defs: Sequence[Definition], name: str) -> list[tuple[bool, Definition]]:
    """(exact, definition) pairs for `name`, in `find`'s order."""
    parts = _name_parts(name)
    if not parts:
        return []
    hits: list[Definition] = []
    if parts[0] in ("self", "cls") and len(parts) == 2:
        hits = [d for d in defs if d.kind == "method" and d.qualname.rsplit(".", 1)[-1] == parts[1]]
        parts = parts[1:]
    else:
        # All of the name, then the name as a re-export, then fewer leading parts (never fewer
        # than two: one word alone after an unknown head, `os.path.join`, names nothing here).
        hits = [d for d in defs if d.dotted.split(".")[-len(parts) :] == parts]
        if not hits:
            hits = [d for d in defs if _reexported(d, parts)]
        for drop in range(1, len(parts) - 1):
            if hits:
                break
            hits = [d for d in defs if d.dotted.split(".")[-(len(parts) - drop) :] == parts[drop:]]
    joined = ".".join(parts)
    ranked = [(d.qualname == joined or d.dotted == joined, d) for d in hits]
    ranked.sort(key=lambda pair: (pair[1].test, not pair[0], pair[1].path, pair[1].lineno))
    return ranked


def _name_parts(name: str) -> list[str]:
    text = name.strip().strip("`").split("(", 1)[0].strip().strip(".")
    parts = text.split(".")
    return parts if all(_IDENT.match(part) for part in parts) else []


def _reexported(d: Definition, parts: list[str]) -> bool:
    """Whether `parts` is a package above `d`'s module followed by `d`'s whole qualname."""
    qualname, module = d.qualname.split("."), d.module.split(".") if d.module else []
    head = parts[: len(parts) - len(qualname)]
    return (
        len(parts) > len(qualname)
        and parts[len(head) :] == qualname
        and head == module[: len(head)]
    )


_BACKTICKED = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.py)\b")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_LEADING_NAME = re.compile(r"\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def mentioned(task: str, defs: list[Definition]) -> list[Definition]:
    """The definitions a task names, in the order it first names them, without duplicates.

    Names are taken from backticks (```a.b.c(x, y)``` names ``a.b.c``), dotted identifiers and
    ``name(`` calls in prose, and resolved with `find` among non-test definitions. A bare name
    that is a parameter of a definition named before it (```factory```) is that parameter, not a
    definition. When the task mentions files (```geo/__init__.py```), a name defined in
    one of them means that one.
    """
    names, paths = _mentions(task)
    pool = [d for d in defs if not d.test]
    chosen: list[Definition] = []
    parameters: set[str] = set()
    for name in names:
        if "." not in name and name in parameters:
            continue
        ranked = _ranked(pool, name)
        if any(exact for exact, _ in ranked):
            ranked = [pair for pair in ranked if pair[0]]
        hits = [d for _, d in ranked]
        in_files = [d for d in hits if any(_in_file(d, path) for path in paths)]
        for d in in_files or hits:
            if d not in chosen:
                chosen.append(d)
                parameters |= _source.parameter_names(d.signature)
    return chosen


def _mentions(task: str) -> tuple[list[str], list[str]]:
    """The names a task mentions, in order of position, and the file paths it mentions."""
    found: list[tuple[int, str]] = []
    paths: list[str] = []
    prose = list(task)
    for match in _BACKTICKED.finditer(task):
        inner = match.group(1).strip()
        prose[match.start() : match.end()] = " " * (match.end() - match.start())
        if _PATH.fullmatch(inner):
            paths.append(inner.removeprefix("./"))
        elif leading := _LEADING_NAME.match(inner):
            found.append((match.start(), leading.group(1)))
    text = "".join(prose)
    for match in _PATH.finditer(text):
        paths.append(match.group(1).removeprefix("./"))
        text = text[: match.start()] + " " * len(match.group(0)) + text[match.end() :]
    found += [(m.start(), m.group(1)) for m in _DOTTED.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _CALL.finditer(text)]
    return [name for _, name in sorted(found)], paths


def task_paths(task: str) -> list[str]:
    """The file paths a task mentions (``textkit/words.py``), in order, without duplicates."""
    return list(dict.fromkeys(_mentions(task)[1]))


def _in_file(d: Definition, path: str) -> bool:
    return d.path == path or d.path.endswith("/" + path)


def render_map(defs: list[Definition], *, budget_tokens: int, focus: Sequence[str] = ()) -> str:
    """An Aider-style outline of the project: each file's path, then its indented signatures.

    Files holding a `focus` definition (qualnames or names) come first, then files whose
    definitions share words with the focus (``_scaled_radius`` shares ``radius``), then the rest by
    path, test files last. Whole files are added while the text fits `budget_tokens` (estimated
    as characters // 4); a first file too big alone is cut to the definitions nearest the focus.
    A cut map ends with ``… N more files``.
    """
    by_path: dict[str, list[Definition]] = {}
    for d in sorted(defs, key=lambda d: (d.path, d.lineno)):
        by_path.setdefault(d.path, []).append(d)
    focus_defs = [d for name in focus for d in find(defs, name)]
    order = _ranked_paths(by_path, focus, focus_defs)
    shown: list[str] = []
    for index, path in enumerate(order):
        block = _render_file(path, by_path[path])
        if _tokens("\n".join([*shown, block, _more(len(order) - index - 1)])) <= budget_tokens:
            shown.append(block)
            continue
        if shown:
            shown.append(_more(len(order) - index))
        else:
            others = len(order) - 1
            shown += [_cut_file(path, by_path[path], focus_defs, budget_tokens, others)]
            shown += [_more(others)] if others else []
        break
    return "\n".join(shown)


def _ranked_paths(
    by_path: dict[str, list[Definition]], focus: Sequence[str], focus_defs: list[Definition]
) -> list[str]:
    focus_paths = list(dict.fromkeys(d.path for d in focus_defs))
    words = set().union(*(_words(name) for name in focus), *(_words(d.dotted) for d in focus_defs))

    def key(path: str) -> tuple[bool, int, int, str]:
        test = by_path[path][0].test
        if path in focus_paths:
            return (test, 0, focus_paths.index(path), path)
        shared = len(words & set().union(*(_words(d.qualname) for d in by_path[path])))
        return (test, 1 if shared else 2, -shared, path)

    return sorted(by_path, key=key)


def _words(name: str) -> set[str]:
    found = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+", name)
    return {w.lower() for w in found if len(w) >= 3 and w.lower() not in _STOP_WORDS}


def _map_line(d: Definition) -> str:
    indent = "  " * (d.qualname.count(".") + 1)
    return f"{indent}{d.signature}{':' if d.kind == 'class' else ''}"


def _render_file(path: str, defs: list[Definition]) -> str:
    return "\n".join([f"{path}:", *(_map_line(d) for d in defs)])


def _cut_file(
    path: str, defs: list[Definition], focus: list[Definition], budget: int, files_left: int
) -> str:
    """The definitions of a file nearest the focus that fit, in file order."""
    anchors = [d for d in focus if d.path == path] or defs[:1]
    # A focused method brings its classes: the outline must say whose method it is.
    owners = {
        a.qualname.rsplit(".", i)[0] for a in anchors for i in range(1, a.qualname.count(".") + 1)
    }

    def distance(d: Definition) -> tuple[int, int]:
        if d in anchors or d.qualname in owners:
            return (0, d.lineno)
        return (1, min(abs(d.lineno - a.lineno) for a in anchors))

    kept: list[Definition] = []
    for d in sorted(defs, key=distance):
        trial = sorted([*kept, d], key=lambda k: k.lineno)
        text = _cut_text(path, trial, len(defs) - len(trial), files_left)
        if kept and _tokens(text) > budget:
            break
        kept = trial
    return _cut_text(path, kept, len(defs) - len(kept), 0).rstrip()


def _cut_text(path: str, kept: list[Definition], hidden: int, files_left: int) -> str:
    lines = [f"{path}:", *(_map_line(d) for d in kept)]
    if hidden:
        lines.append(f"  … {hidden} more definitions")
    if files_left:
        lines.append(_more(files_left))
    return "\n".join(lines)


def _more(files: int) -> str:
    return f"… {files} more files" if files else ""


def _tokens(text: str) -> int:
    return len(text.strip()) // 4


def excerpt(root: Path, d: Definition, *, budget_tokens: int) -> str:
    """What the model should see around `d` to change it, with line numbers (``  397| def …``).

    For a function (or class): the module's imports and the module-level names its source
    mentions (constants in full, functions and classes as signature + first docstring line),
    then its full source. For a method: its class's header, docstring and class-level
    assignments, ``__init__`` in full, the methods it calls as ``self.<name>`` in full, every
    other method as signature + first docstring line, and the method in full. Less important
    parts are left out first to fit `budget_tokens`; the target's own source is never cut (alone
    over budget, it is returned alone). Gaps between shown lines are marked ``⋮``.
    """
    return excerpt_lines(root / d.path, d.qualname, d.lineno, budget_tokens)
