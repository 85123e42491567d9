"""Definitions a task asks to add to a project: written as calls, defined nowhere yet.

"Add a function longest_word(text) to textkit/words.py" names a function the project does not
define and the file it goes in. The plan's step targets that name in that file
(:attr:`Definition.new`), its checks may fail on the project as it is only because the name is
missing, and its edit is the new definition appended to the file, or to its class for
``Class.method`` (:func:`atom_agent.project.edits.apply_edit`).
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from pathlib import Path

from atom_agent.project import _source
from atom_agent.project.repomap import (
    Definition,
    is_test_path,
    module_name,
    render_map,
    scan_file,
    task_paths,
)

_CALLED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\(")
_BUILTINS = frozenset(dir(builtins))
MAX_NEW = 3
"""Most new definitions one task adds (more call-shaped names are likely prose, not asks)."""


def new_definitions(task: str, defs: list[Definition], root: Path) -> list[Definition]:
    """The definitions `task` asks to add, in the order it names them.

    A name written as a call (``name(`` or ``Class.method(``) that the project defines nowhere
    is new when the task names the existing, non-test file it goes in, or, for a method, the
    class is one the project defines once. Builtins, keywords, names the file already binds
    (imports, assignments) and parameters of the new definitions are not new. Its signature is
    the task's own when one of its mentions parses as a parameter list (``longest_word(text)``),
    else unknown ("").
    """
    files = [p for p in task_paths(task) if (root / p).is_file() and not is_test_path(p)]
    project = [d for d in defs if not d.test]
    found: list[Definition] = []
    # A parameter of a definition the task names (``apply(fn)`` … ``fn(x)``) is no new name.
    parameters = {
        p
        for d in project
        if re.search(rf"(?<![\w]){re.escape(d.qualname.rsplit('.', 1)[-1])}\b", task)
        for p in _source.parameter_names(d.signature)
    }
    for match in _CALLED.finditer(task):
        name = match.group(1)
        if name in parameters or any(d.qualname == name for d in found):
            continue
        placed = _placed(name, files, project, root)
        if placed is None:
            continue
        path, kind = placed
        signature = _signature(task, name, method=kind == "method")
        found.append(_definition(path, name, kind, signature))
        parameters |= _source.parameter_names(signature) if signature else set()
    found = [d for d in found if d.qualname not in parameters]
    return found[:MAX_NEW]


def _placed(
    name: str, files: list[str], project: list[Definition], root: Path
) -> tuple[str, str] | None:
    """Where a new `name` goes (its file, ``function`` or ``method``), or None if not new."""
    owner, _, attr = name.rpartition(".")
    if owner:
        classes = [d for d in project if d.kind == "class" and d.qualname == owner]
        in_files = [d for d in classes if d.path in files]
        chosen = in_files or (classes if len(classes) == 1 else [])
        if len(chosen) != 1 or any(d.qualname == name for d in project):
            return None
        return chosen[0].path, "method"
    if not files or name in _BUILTINS or keyword.iskeyword(name):
        return None
    if any(d.qualname.rsplit(".", 1)[-1] == name for d in project):
        return None
    if name in _bound(root / files[0]):
        return None
    return files[0], "function"


def _bound(path: Path) -> set[str]:
    """The names a module binds at its top level (imports, assignments, definitions)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def _signature(task: str, name: str, *, method: bool) -> str:
    """``def attr(params)`` from the first mention of `name` whose arguments are parameters."""
    attr = name.rpartition(".")[2]
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\(", task):
        inner = _balanced(task, match.end())
        if inner is None:
            continue
        try:
            ast.parse(f"def {attr}({inner}):\n    pass\n")
        except SyntaxError:
            continue  # a call with values (``longest_word('a bb')``), not a parameter list
        if method and not inner.strip().startswith(("self", "cls")):
            inner = "self" + (", " + inner if inner.strip() else "")
        return f"def {attr}({inner})"
    return ""


def _balanced(text: str, start: int) -> str | None:
    """The text from `start` to the parenthesis that closes the one before it (None: unclosed)."""
    depth = 1
    for i in range(start, min(len(text), start + 400)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


def _definition(path: str, name: str, kind: str, signature: str) -> Definition:
    return Definition(
        path=path,
        module=module_name(path),
        qualname=name,
        kind=kind,
        signature=signature,
        lineno=0,
        end_lineno=0,
        doc="",
        stub=True,
        new=True,
    )


def placement(root: Path, path: str, *, budget_tokens: int) -> str:
    """What the model sees of the file at `path` a new definition goes in, line numbers on.

    The whole file when it fits `budget_tokens` (characters // 4), else its outline (the
    signatures of what it defines), so the new code can use the file's imports and helpers.
    """
    lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
    numbered = "\n".join(f"{n:5}| {line}" for n, line in enumerate(lines, 1))
    if len(numbered) // 4 <= budget_tokens:
        return numbered or "(the file is empty)"
    mine = scan_file(root.resolve(), (root / path).resolve())
    return render_map(mine, budget_tokens=budget_tokens) or "(the file defines nothing)"
