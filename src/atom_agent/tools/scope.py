"""Where one attempt's tools may read and write: the scope, and the model's paths checked."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from langchain_core.tools import ToolException

from atom_agent.tools.confine import Located, locate, shown_name
from atom_agent.workspace import AttemptRef, StepRef, Workspace

DEPS = "deps"
"""Virtual top-level directory under which dependency artifacts are readable: deps/<step_id>/…"""

SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".git"})
"""Directories listings and searches pass over."""


@dataclass(frozen=True)
class ToolScope:
    """Where one attempt's tools may read and write.

    Paths the model passes are relative: ``impl.py`` is in the staging area (read/write);
    ``deps/<step_id>/impl.py`` is a committed artifact of a dependency (read-only).

    Attributes:
        staging: the attempt's staging directory.
        dependencies: committed artifact directories of the step's dependencies, by step id.
        max_write_bytes: largest file write_file / edit_file may produce.
        max_read_bytes: most bytes read_file returns in one call.
        max_list_entries: most entries list_files returns.
        read_only: staged files the model may read and run but never write (the step's
            checks, staged as its tests: a failing check is fixed in the code, not there).
        started: the staging area begins with code to improve (the plain answer, or the
            step's best so far), not empty.
    """

    staging: Path
    dependencies: Mapping[str, Path] = field(default_factory=dict)
    max_write_bytes: int = 512 * 1024
    max_read_bytes: int = 128 * 1024
    max_list_entries: int = 500
    read_only: frozenset[str] = frozenset()
    started: bool = False

    @classmethod
    def for_attempt(cls, workspace: Workspace, step: StepRef, attempt: AttemptRef) -> ToolScope:
        """The scope of `attempt`: its staging plus the dependencies' committed artifacts."""
        return cls(staging=attempt.staging, dependencies=workspace.dependency_artifacts(step))

    def describe(self) -> str:
        """Text for the executor prompt: which paths to write, which to read.

        Only relative paths: the tools resolve them, and a prompt without the run's own
        folders is the same prompt in every run (a replay cache answers it; a model's
        prefix cache reuses it).
        """
        lines = [
            "Write your files with relative paths (e.g. impl.py, test.py); they go to "
            "your staging area."
        ]
        if self.started:
            lines.append(
                "impl.py already holds a first version of the code: read it, run the tests, "
                "and fix what fails in impl.py instead of starting over."
            )
        for name in sorted(self.read_only):
            lines.append(
                f"{name} holds the step's checks (read-only): they state what the task "
                f"requires; when one fails, change the code, never the check."
            )
        for step_id in self.dependencies:
            lines.append(
                f"Dependency {step_id!r} (read-only): read as {DEPS}/{step_id}/<file>; "
                f"importable in run_python/run_tests."
            )
        return "\n".join(lines)

    def python_path(self) -> list[Path]:
        """``PYTHONPATH`` for sandboxed runs: staging first, then the dependencies."""
        return [self.staging, *self.dependencies.values()]

    # --- path confinement ----------------------------------------------------------------------

    def locate_read(self, path: str) -> tuple[Located, str]:
        """Where `path` is for reading, and the prefix it is shown with (``deps/<id>`` or "").

        The caller closes the :class:`Located`. Raises ToolException when not allowed.
        """
        parts = split_path(path)
        if parts and parts[0] == DEPS:
            if len(parts) == 1:
                raise ToolException(
                    f"'{DEPS}' lists the dependencies; name one, e.g. "
                    f"'{DEPS}/<step_id>/impl.py' ({self._dep_names()})"
                )
            dep = self.dependencies.get(parts[1])
            if dep is None:
                raise ToolException(f"no dependency {parts[1]!r}: {self._dep_names()}")
            return locate(Path(dep), parts[2:], path), f"{DEPS}/{parts[1]}"
        return locate(self.staging, parts, path), ""

    def locate_write(
        self, path: str, *, make_dirs: bool = False, run_only: bool = False
    ) -> Located:
        """Where `path` is in the staging area for writing (the caller closes it).

        `run_only`: the file is only handed to the sandbox to run (read-only files allowed).
        """
        parts = split_path(path)
        if parts and parts[0] == DEPS:
            raise ToolException(
                f"{path!r} is a dependency artifact, which is read-only; write "
                f"your own files into the staging area (e.g. 'impl.py')"
            )
        if not parts:
            raise ToolException("write_file needs a file name, e.g. 'impl.py'")
        if not run_only and "/".join(parts) in self.read_only:
            raise ToolException(
                f"{path!r} holds the step's checks and is read-only: they state what the "
                f"task requires. Change impl.py so that they pass."
            )
        return locate(self.staging, parts, path, make_dirs=make_dirs)

    def resolve_write(self, path: str) -> Path:
        """The absolute path `path` names in the staging area (links inside followed).

        For handing a file to the sandbox runner; the file tools themselves never reopen a
        path by name: they work through the directory fds of :meth:`locate_write`.
        """
        with self.locate_write(path, run_only=True) as where:
            return self.staging.resolve().joinpath(*where.parts)

    def _dep_names(self) -> str:
        names = ", ".join(f"{DEPS}/{d}" for d in self.dependencies)
        return f"available: {names}" if names else "this step has no dependencies"


def shown_path(prefix: str, parts: tuple[str, ...]) -> str:
    r"""A path as the model names it: ``impl.py``, ``deps/<id>/impl.py``; bad bytes as ``\xNN``."""
    rel = "/".join(shown_name(p) for p in parts)
    if prefix:
        return f"{prefix}/{rel}" if rel else prefix
    return rel or "."


_MAX_PATH_CHARS = 1024
_MAX_NAME_BYTES = 255
_MAX_PATH_DEPTH = 64


def split_path(path: str) -> tuple[str, ...]:
    """The parts of a model-given relative path; ToolException for anything not a plain path.

    Refused: absolute paths, '..', NUL, backslashes, lone surrogates, names longer than the
    file system allows, and code or prose put into the path by mistake.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolException("path must be a non-empty relative path such as 'impl.py'")
    if "\x00" in path:
        raise ToolException("path contains a NUL byte")
    breaks = "\n" in path or "\r" in path
    if breaks or len(path) > _MAX_PATH_CHARS:
        raise ToolException(
            f"path is {len(path)} characters{' with line breaks' if breaks else ''}; a path "
            f"must be a file name such as 'impl.py', not code — put the code in `content`"
        )
    bad = next((c for c in path if 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None:
        raise ToolException(
            f"path contains a lone UTF-16 surrogate ({ascii(bad)}), which no file name can "
            f"hold; use a plain name such as 'impl.py'"
        )
    if "\\" in path:
        raise ToolException(f"{path!r}: use forward slashes in paths")
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        raise ToolException(
            f"{path!r} is absolute; use a path relative to your staging area, "
            f"e.g. 'impl.py' or '{DEPS}/<step_id>/impl.py'"
        )
    if ".." in pure.parts:
        raise ToolException(
            f"{path!r}: '..' is not allowed; name files relative to your "
            f"staging area, e.g. 'impl.py'"
        )
    parts = tuple(p for p in pure.parts if p != ".")
    longest = max((len(p.encode("utf-8")) for p in parts), default=0)
    if longest > _MAX_NAME_BYTES:
        raise ToolException(
            f"path is {len(path)} characters and one name in it is {longest} bytes (the limit "
            f"is {_MAX_NAME_BYTES}); a path must be a file name such as 'impl.py', not code — "
            f"put the code in `content`"
        )
    if len(parts) > _MAX_PATH_DEPTH:
        raise ToolException(
            f"path is {len(parts)} directories deep (the limit is {_MAX_PATH_DEPTH}); use a "
            f"flatter layout such as 'pkg/impl.py'"
        )
    return parts


def scope_roots(scope: ToolScope, path: str) -> Iterator[tuple[Located, str]]:
    """What a listing or search of `path` covers: ``(where, display prefix)``, one at a time.

    '.' is the staging area and every dependency; 'deps' every dependency; anything else the
    one directory or file it names. Each :class:`Located` is opened only when reached.
    """
    parts = split_path(path)
    if parts and parts != (DEPS,):
        yield scope.locate_read(path)
        return
    if not parts:
        yield locate(scope.staging, (), path), ""
    for step_id, dep in scope.dependencies.items():
        yield locate(Path(dep), (), path), f"{DEPS}/{step_id}"
