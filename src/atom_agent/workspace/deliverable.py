"""The run's deliverable: its committed steps as one importable package, with their tests.

A run commits each step's files separately (``steps/<id>/committed/artifacts/impl.py``,
``test.py``), importing each other as ``deps.<step>.impl``. The deliverable joins them into
``runs/<id>/result/``::

    result/
      <package>/__init__.py     re-exports every public name (from the step given it to define)
      <package>/<module>.py     one module per step, named after what it defines or its title
      tests/test_<module>.py    the steps' tests, importing the package
      pyproject.toml            pytest settings: ``python -m pytest`` from result/ runs them
      README.md                 what is where

Imports are rewritten with :mod:`ast` (:mod:`atom_agent.workspace._rewrite`), then the whole
suite runs once more in the sandbox; its counts, the modules, the exports and every name that
two steps define differently go into run.json (``deliverable``) and report.md.
"""

from __future__ import annotations

import ast
import keyword
import logging
import os
import re
import shutil
import sys
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.errors import SandboxError, WorkspaceError
from atom_agent.names import is_public, named_in_text
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import IMPL_FILE, Plan, topological_order
from atom_agent.workspace._rewrite import ImportMap, rewrite_imports
from atom_agent.workspace.atomic import atomic_write_bytes, atomic_write_text
from atom_agent.workspace.tree import RunRef, Workspace

logger = logging.getLogger(__name__)

RESULT_DIR = "result"
"""The deliverable's folder inside a run directory."""

_RESERVED = frozenset(sys.stdlib_module_names) | {
    "deps", "impl", "test", "tests", "conftest", "setup", "pytest", "result", "src",
}  # fmt: skip
_FILLER = frozenset(
    "a an the and or of for to with in on from by into that which its it is are be "
    "write implement implements add adds create build make define python function "
    "functions class classes module step code tests test pytest unit using use new".split()
)
_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache"})


class ExportError(WorkspaceError):
    """The deliverable cannot be written where asked (files exist, or it does not exist)."""


@dataclass
class _Step:
    """One committed step as it enters the package."""

    step_id: str
    title: str
    artifacts: Path
    module: str = ""
    definitions: dict[str, str] = field(default_factory=dict)  # name → normalised ast dump
    extra: dict[str, str] = field(default_factory=dict)  # other module stems → package module
    defines: tuple[str, ...] = ()  # the names the plan gives the step to define


def result_dir(run: RunRef) -> Path:
    """``runs/<id>/result/``."""
    return run.path / RESULT_DIR


def build_deliverable(
    workspace: Workspace,
    run: RunRef,
    plan: Plan,
    statuses: Mapping[str, str],
    *,
    task: str,
    runner: SandboxRunner | None = None,
    limits: Limits | None = None,
) -> dict[str, Any] | None:
    """Write ``result/`` from the run's committed steps and run its tests in the sandbox.

    Args:
        workspace: the workspace of the run.
        run: the run.
        plan: the run's final plan (its order decides which definition wins).
        statuses: step statuses; only committed steps enter the package.
        task: the task text (names the package).
        runner: the sandbox runner for the final test run (None: the tests are not run).
        limits: the sandbox limits of that run.

    Returns:
        The summary written to run.json (``path``, ``package``, ``modules``, ``exports``,
        ``conflicts``, ``tests``, ``notes``), or None when no step was committed.
    """
    steps = [
        _Step(s.id, s.title, workspace.step(run, s.id).artifacts, defines=tuple(s.defines))
        for s in (next(p for p in plan.steps if p.id == i) for i in topological_order(plan))
        if statuses.get(s.id) == "committed" and (run.steps_dir / s.id).is_dir()
    ]
    steps = [s for s in steps if (s.artifacts / IMPL_FILE).is_file()]
    if not steps:
        return None
    notes: list[str] = []
    for s in steps:
        s.definitions = _definitions(s.artifacts / "impl.py", notes)
    defined = {name for s in steps for name in s.definitions}
    package = _package_name(task, steps, defined)
    _name_modules(steps, defined, package)
    staging = run.path / f".result-{uuid.uuid4().hex[:8]}"
    try:
        exports, conflicts, test_files = _write_tree(staging, package, steps, task, notes)
        _swap_in(staging, result_dir(run))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    summary: dict[str, Any] = {
        "path": str(result_dir(run)),
        "package": package,
        "modules": {s.step_id: f"{package}.{s.module}" for s in steps},
        "exports": exports,
        "conflicts": conflicts,
        "test_files": test_files,
        "notes": notes,
        "tests": None,
    }
    if runner is not None and test_files:
        summary["tests"] = _run_tests(result_dir(run), runner, limits or Limits())
    return summary


# --- names ---------------------------------------------------------------------------------------


def snake(name: str) -> str:
    """``LRUCache`` → ``lru_cache``, ``parseHTTPDate`` → ``parse_http_date``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()


def _usable(name: str, taken: Iterable[str]) -> bool:
    return (
        bool(name)
        and name.isidentifier()
        and not name[0].isdigit()
        and not keyword.iskeyword(name)
        and name not in _RESERVED
        and name not in taken
    )


def _slug(text: str, max_words: int) -> str:
    """The meaningful words of a short title as an identifier ('' for a longer text)."""
    if len(text.split()) > max_words + 1:  # a sentence (a task's first line), not a title
        return ""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) if w.lower() not in _FILLER]
    if not words or len(words) > max_words:
        return ""
    return snake("_".join(words))


def _package_name(task: str, steps: list[_Step], defined: set[str]) -> str:
    """The package's name, from the task: a class it names, a function, or its key words."""
    named = [n for n in named_in_text(task) if n in defined]
    candidates = [snake(n) for n in sorted(named, key=lambda n: not n[:1].isupper())]
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", task) if w.lower() not in _FILLER]
    candidates.append(snake("_".join(words[:2])))
    candidates += [snake(next(iter(s.definitions), "")) for s in steps]
    for name in candidates:
        if _usable(name, ()):
            return name
        if _usable(name + "_lib", ()):
            return name + "_lib"
    return "deliverable"


def _name_modules(steps: list[_Step], defined: set[str], package: str) -> None:
    """Name each step's module after what it defines or its title, never like a public name.

    A module may not share a name with a function or class the package exports: the
    package's ``__init__`` re-exports that name, and ``import pkg.name as m`` would then
    give the function instead of the module.
    """
    taken: set[str] = {*defined, package}
    for s in steps:
        names = list(s.definitions)
        classes = [n for n in names if s.definitions[n].startswith("ClassDef")]
        ident = s.step_id.replace("-", "_")
        candidates = [
            *(snake(c) for c in classes[:1]),
            _slug(s.title, 4),
            *(snake(n) + "s" for n in names[:1] if snake(n).endswith(("er", "or"))),
            "" if re.fullmatch(r"step_?\d+", ident) else snake(ident),
            *(_unprefixed(snake(n)) for n in names[:1]),
            *(snake(n) + "_module" for n in names[:1]),
            f"step_{snake(ident)}",
        ]
        base = next((c for c in candidates if _usable(c, taken)), f"step_{len(taken)}")
        module, n = base, 2
        while not _usable(module, taken):
            module, n = f"{base}_{n}", n + 1
        s.module = module
        taken.add(module)


_VERB = re.compile(r"^(?:is|has|get|make|to|compute|calc|calculate|find|parse|check|build)_")


def _unprefixed(name: str) -> str:
    """``is_palindrome`` → ``palindrome``: a function's subject names its module."""
    return _VERB.sub("", name) if _VERB.match(name) else ""


def _definitions(impl: Path, notes: list[str]) -> dict[str, str]:
    """Public top-level functions and classes of `impl`, each with its normalised ast dump."""
    try:
        tree = ast.parse(impl.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError as exc:
        notes.append(f"{impl}: does not parse ({exc.msg}, line {exc.lineno}); copied as it is")
        return {}
    return {
        node.name: ast.dump(node)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and is_public(node.name)
    }


def _is_test_file(name: str) -> bool:
    stem = name[:-3]
    return name.endswith(".py") and (
        stem in ("test", "tests") or stem.startswith("test_") or stem.endswith("_test")
    )


# --- the tree ------------------------------------------------------------------------------------


def _write_tree(
    root: Path, package: str, steps: list[_Step], task: str, notes: list[str]
) -> tuple[dict[str, str], list[dict[str, Any]], list[str]]:
    """Write the package, its tests and its settings under `root`.

    Returns:
        The exports, the conflicts and the test files (relative to `root`).
    """
    pkg_dir, tests_dir = root / package, root / "tests"
    pkg_dir.mkdir(parents=True)
    tests_dir.mkdir()
    taken = {s.module for s in steps} | {n for s in steps for n in s.definitions}
    for s in steps:  # other modules a step wrote beside impl.py keep their name where free
        for path in sorted(s.artifacts.glob("*.py")):
            stem = path.stem
            if path.name == IMPL_FILE or _is_test_file(path.name) or stem == "conftest":
                continue
            module = stem if _usable(stem, taken) else f"{s.module}_{snake(stem)}"
            s.extra[stem] = module
            taken.add(module)
    mapping_deps: dict[tuple[str, str], str] = {}
    for s in steps:
        ident = s.step_id.replace("-", "_")
        ident = f"s_{ident}" if ident[0].isdigit() else ident
        mapping_deps[(ident, "impl")] = f"{package}.{s.module}"
        for stem, module in s.extra.items():
            mapping_deps[(ident, stem)] = f"{package}.{module}"
    test_files: list[str] = []
    for s in steps:
        local = {"impl": f"{package}.{s.module}"}
        local |= {stem: f"{package}.{m}" for stem, m in s.extra.items()}
        mapping = ImportMap(local=local, deps=mapping_deps)
        for path in sorted(p for p in s.artifacts.rglob("*") if p.is_file()):
            rel = path.relative_to(s.artifacts)
            if _SKIP_DIRS & set(rel.parts):
                continue
            if path.suffix != ".py" or len(rel.parts) > 1:
                notes.append(f"step {s.step_id}: {rel} is not a top-level Python file; not copied")
                continue
            if path.name == IMPL_FILE:
                dest = pkg_dir / f"{s.module}.py"
            elif path.name == "conftest.py":
                notes.append(f"step {s.step_id}: conftest.py not copied (fixtures would clash)")
                continue
            elif _is_test_file(path.name):
                stem = path.stem.removeprefix("test_").removesuffix("_test")
                suffix = "" if stem in ("test", "tests") else f"_{snake(stem)}"
                dest = tests_dir / f"test_{s.module}{suffix}.py"
                test_files.append(dest.relative_to(root).as_posix())
            else:
                dest = pkg_dir / f"{s.extra[path.stem]}.py"
            _copy_rewritten(path, dest, mapping, f"{s.step_id}/{rel}", notes)
    exports, conflicts = _exports(steps)
    atomic_write_text(pkg_dir / "__init__.py", _init_source(task, package, steps, exports))
    atomic_write_text(root / "pyproject.toml", _PYPROJECT)
    atomic_write_text(root / "README.md", _readme(task, package, steps, exports, conflicts))
    return exports, conflicts, test_files


def _copy_rewritten(
    src: Path, dest: Path, mapping: ImportMap, label: str, notes: list[str]
) -> None:
    text = src.read_text(encoding="utf-8", errors="replace")
    try:
        rewritten = rewrite_imports(text, mapping, filename=label)
    except SyntaxError as exc:
        notes.append(f"{label}: does not parse ({exc.msg}); copied without rewriting")
        atomic_write_bytes(dest, src.read_bytes())
        return
    notes += rewritten.problems
    atomic_write_text(dest, rewritten.source)


def _exports(steps: list[_Step]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Each public name → the module it is exported from; names defined differently.

    A name comes from the last step that was given it to define; a copy another step keeps
    in its module (a step for ``area_of`` writing ``perimeter_of`` again) stays
    that module's own and never replaces the owner's, which its own checks proved. A name no
    step was given comes from the last step defining it (steps come in plan order).
    """
    exports: dict[str, str] = {}
    owned: set[str] = set()
    seen: dict[str, list[_Step]] = {}
    for s in steps:
        for name in s.definitions:
            seen.setdefault(name, []).append(s)
            if name in s.defines:
                exports[name] = s.module
                owned.add(name)
            elif name not in owned:
                exports[name] = s.module
    conflicts = []
    for name, owners in seen.items():
        if len({o.definitions[name] for o in owners}) > 1:
            conflicts.append(
                {
                    "name": name,
                    "defined_in": [{"step": o.step_id, "module": o.module} for o in owners],
                    "exported_from": exports[name],
                }
            )
    return exports, conflicts


def _init_source(task: str, package: str, steps: list[_Step], exports: Mapping[str, str]) -> str:
    first = next((ln.strip() for ln in task.splitlines() if ln.strip()), package)
    doc = first if len(first) <= 90 else first[:87].rstrip() + "..."
    lines = [f'"""{_doc_safe(doc)}"""', ""]
    for s in steps:
        names = [n for n, m in exports.items() if m == s.module]
        if names:
            lines.append(f"from {package}.{s.module} import {', '.join(names)}")
    lines += ["", "__all__ = [" + ", ".join(repr(n) for n in sorted(exports)) + "]", ""]
    return "\n".join(lines)


def _doc_safe(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', "'''").rstrip('"')


_PYPROJECT = """\
# Written by atom-agent: `python -m pytest` from this folder runs the gathered tests.
[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
"""


def _readme(
    task: str,
    package: str,
    steps: list[_Step],
    exports: Mapping[str, str],
    conflicts: list[dict[str, Any]],
) -> str:
    lines = [f"# {package}", "", "Made by atom-agent for the task:", ""]
    lines += [f"> {ln}" for ln in task.strip().splitlines()[:20]]
    lines += ["", "| module | step | defines |", "|---|---|---|"]
    for s in steps:
        names = ", ".join(f"`{n}`" for n in s.definitions) or "—"
        lines.append(f"| `{package}.{s.module}` | {s.step_id}: {s.title[:60]} | {names} |")
    lines += ["", f"`from {package} import {', '.join(sorted(exports)[:5])}`", ""]
    lines += ["Run the tests from this folder: `python -m pytest`", ""]
    for c in conflicts:
        lines.append(f"- `{c['name']}` is defined differently in {_owners(c)}; the package "
                     f"exports the one in `{c['exported_from']}`.")  # fmt: skip
    return "\n".join(lines) + "\n"


def _owners(conflict: Mapping[str, Any]) -> str:
    return ", ".join(f"`{o['module']}` (step {o['step']})" for o in conflict["defined_in"])


def _swap_in(staging: Path, dest: Path) -> None:
    """Replace `dest` by `staging` (a reader sees the old tree or the new one, never a mix)."""
    old = dest.with_name(f".{dest.name}-old-{uuid.uuid4().hex[:8]}")
    if dest.exists():
        os.replace(dest, old)
    os.replace(staging, dest)
    shutil.rmtree(old, ignore_errors=True)


def _run_tests(root: Path, runner: SandboxRunner, limits: Limits) -> dict[str, Any]:
    """The gathered tests run once more in the sandbox, against the package as written."""
    try:
        result = runner.run_pytest(cwd=root, limits=limits, targets=["tests"], python_path=[root])
    except SandboxError as exc:
        return {"ok": False, "error": str(exc)}
    finally:
        for cache in [*root.rglob("__pycache__"), *root.rglob(".pytest_cache")]:
            shutil.rmtree(cache, ignore_errors=True)
    counts = result.tests
    return {
        "ok": result.ok,
        "exit_code": result.exit_code,
        "passed": counts.passed if counts else 0,
        "failed": counts.failed if counts else 0,
        "errors": counts.errors if counts else 0,
        "skipped": counts.skipped if counts else 0,
        "duration_s": round(result.duration_s, 3),
        "failing": failing_tests(result.output) if not result.ok else [],
        "output_tail": result.output[-1500:] if not result.ok else "",
    }


_SUMMARY_NODE = re.compile(r"^(?:FAILED|ERROR) (\S+)")


def failing_tests(output: str) -> list[str]:
    """The failing and erroring tests pytest's short summary names (``tests/test_a.py::test_x``).

    In the order pytest lists them, each once; empty when the output has no summary (a run
    killed before it ends).
    """
    return list(dict.fromkeys(m.group(1) for m in map(_SUMMARY_NODE.match, output.splitlines())
                              if m))  # fmt: skip


# --- report and export ---------------------------------------------------------------------------


PLAIN_MODULE = "plain_answer"
"""The module of an unverified plain answer in ``result/`` (a run that committed nothing)."""


def plain_deliverable(
    run: RunRef, source: str, why: str, *, committed: bool = False
) -> dict[str, Any]:
    """``result/`` of a run that committed nothing: the model's plain answer, unverified.

    Never worse than asking the model once: the user gets the code one plain call gave, with
    a README that says it is not verified and why (the checks it fails). With `committed`, the
    run committed steps whose package executed worse on the task's checks than this answer
    (they stay under ``steps/``).
    """
    headline = (
        "The steps this run committed (under `steps/*/committed/`) pass fewer of the task's "
        "own checks than the code one plain call of the model gave, so that code is handed "
        "back instead. It is not verified."
        if committed
        else "No step of this run was committed, so nothing here is verified. This is the code "
        "one plain call of the model gave for the whole task."
    )
    staging = run.path / f".result-{uuid.uuid4().hex[:8]}"
    try:
        atomic_write_text(staging / f"{PLAIN_MODULE}.py", source)
        atomic_write_text(
            staging / "README.md",
            f"# Unverified: the model's plain answer\n\n{headline}\n\nWhy: {why}\n",
        )
        _swap_in(staging, result_dir(run))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {
        "path": str(result_dir(run)),
        "package": PLAIN_MODULE,
        "modules": {"plain": PLAIN_MODULE},
        "exports": {},
        "conflicts": [],
        "test_files": [],
        "notes": [f"unverified: {why}"],
        "tests": None,
        "unverified": True,
    }


def deliverable_markdown(summary: Mapping[str, Any] | None, run_id: str) -> str:
    """The report.md section about ``result/`` ('' when the run committed nothing)."""
    if not summary:
        return ""
    if summary.get("unverified"):
        return (
            "## Result (unverified)\n\n"
            f"`{summary['path']}/{PLAIN_MODULE}.py`: the model's plain answer to the whole "
            "task. No step was committed, so **nothing in it is verified**: "
            f"{'; '.join(summary.get('notes') or [])}\n"
        )
    package = summary["package"]
    lines = ["## Result", ""]
    lines.append(
        f"`{summary['path']}`: the package `{package}` and its tests. Take it with "
        f"`atom-agent runs export {run_id} DIR`, or run the tests there: `python -m pytest`."
    )
    lines += ["", "| step | module |", "|---|---|"]
    lines += [f"| {step} | `{module}` |" for step, module in summary["modules"].items()]
    tests = summary.get("tests")
    lines.append("")
    if tests and "error" in tests:
        lines.append(f"The final test run could not start: {tests['error']}")
    elif tests:
        verdict = "pass" if tests["ok"] else "**fail**"
        lines.append(
            f"Final test run in the sandbox ({len(summary['test_files'])} files): {verdict} — "
            f"{tests['passed']} passed, {tests['failed']} failed, {tests['errors']} errors, "
            f"{tests['skipped']} skipped (exit {tests['exit_code']})."
        )
    else:
        lines.append("No tests were gathered.")
    for c in summary.get("conflicts") or []:
        lines.append(f"- Defined twice, differently: `{c['name']}` in {_owners(c)}; "
                     f"exported from `{c['exported_from']}`.")  # fmt: skip
    for note in (summary.get("notes") or [])[:20]:
        lines.append(f"- Note: {note}")
    return "\n".join(lines) + "\n"


def export_result(source: Path, dest: Path, *, force: bool = False) -> list[Path]:
    """Copy a run's ``result/`` into `dest` (created if needed); returns the files written.

    Raises:
        ExportError: there is no result, `dest` is a file, or files would be overwritten
            without `force` (nothing is written then; the message lists them).
    """
    if not source.is_dir():
        raise ExportError(f"{source} does not exist: the run committed no step (or has not ended)")
    if dest.exists() and not dest.is_dir():
        raise ExportError(f"{dest} exists and is not a directory")
    files = sorted(
        p for p in source.rglob("*")
        if p.is_file() and not _SKIP_DIRS & set(p.relative_to(source).parts)
    )  # fmt: skip
    targets = [dest / p.relative_to(source) for p in files]
    blocked = [t for t in targets if t.exists() and not t.is_file()]
    if blocked:
        raise ExportError(f"{blocked[0]} exists and is not a file; nothing was written")
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        shown = ", ".join(str(t) for t in existing[:5]) + (" …" if len(existing) > 5 else "")
        raise ExportError(
            f"{len(existing)} file(s) exist already in {dest} ({shown}); nothing was written "
            "(pass --force to overwrite them)"
        )
    for src, target in zip(files, targets, strict=True):
        atomic_write_bytes(target, src.read_bytes())
    return targets
