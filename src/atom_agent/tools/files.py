"""File tools (read_file, write_file, edit_file, list_files) confined to an attempt's scope."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from atom_agent.checks.source import python_problems
from atom_agent.workspace import AttemptRef, StepRef, Workspace
from atom_agent.workspace._atomic import TEMP_PREFIX, atomic_write_bytes

logger = logging.getLogger(__name__)

DEPS = "deps"
"""Virtual top-level directory under which dependency artifacts are readable: deps/<step_id>/…"""

_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".git"})
_BINARY_SNIFF = 8192
_MAX_SOURCE_BYTES = 8 * 1024 * 1024  # read_file never loads more than this into memory


@dataclass(frozen=True)
class ToolScope:
    """Where one attempt's tools may read and write.

    Paths the model passes are relative: ``impl.py`` is in the staging area (read/write);
    ``deps/<step_id>/impl.py`` is a committed artifact of a dependency (read-only).

    Attributes:
        staging: the attempt's staging directory.
        dependencies: committed artifact directories of the step's dependencies, by step id.
        owner: ``(run_id, step_id, attempt)`` the scope belongs to; the router refuses calls
            from a session of another attempt. None = not checked.
        max_write_bytes: largest file write_file / edit_file may produce.
        max_read_bytes: most bytes read_file returns in one call.
        max_list_entries: most entries list_files returns.
    """

    staging: Path
    dependencies: Mapping[str, Path] = field(default_factory=dict)
    owner: tuple[str, str, int] | None = None
    max_write_bytes: int = 512 * 1024
    max_read_bytes: int = 128 * 1024
    max_list_entries: int = 500

    @classmethod
    def for_attempt(
        cls, workspace: Workspace, step: StepRef, attempt: AttemptRef, **limits: Any
    ) -> ToolScope:
        """The scope of `attempt`: its staging plus the dependencies' committed artifacts."""
        return cls(
            staging=attempt.staging,
            dependencies=workspace.dependency_artifacts(step),
            owner=(attempt.run_id, attempt.step_id, attempt.n),
            **limits,
        )

    def describe(self) -> str:
        """Text for the executor prompt: which paths to write, which to read."""
        lines = [
            f"Write your files with relative paths (e.g. impl.py, test.py); they go to "
            f"your staging area {self.staging}."
        ]
        for step_id, path in self.dependencies.items():
            lines.append(
                f"Dependency {step_id!r} (read-only): read as {DEPS}/{step_id}/<file>; "
                f"on disk at {path}; importable in run_python/run_tests."
            )
        return "\n".join(lines)

    def python_path(self) -> list[Path]:
        """``PYTHONPATH`` for sandboxed runs: staging first, then the dependencies."""
        return [self.staging, *self.dependencies.values()]

    # --- path confinement ----------------------------------------------------------------------

    def resolve_read(self, path: str) -> tuple[Path, Path]:
        """``(absolute path, root)`` for reading `path`; raises ToolException when not allowed."""
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
            return _confine(Path(dep), parts[2:], path), Path(dep).resolve()
        return _confine(self.staging, parts, path), self.staging.resolve()

    def resolve_write(self, path: str) -> Path:
        """The absolute path for writing `path` (staging only); raises ToolException otherwise."""
        parts = split_path(path)
        if parts and parts[0] == DEPS:
            raise ToolException(
                f"{path!r} is a dependency artifact, which is read-only; write "
                f"your own files into the staging area (e.g. 'impl.py')"
            )
        if not parts:
            raise ToolException("write_file needs a file name, e.g. 'impl.py'")
        return _confine(self.staging, parts, path)

    def display(self, absolute: Path) -> str:
        """The path as the model should name it (``impl.py`` or ``deps/<id>/impl.py``)."""
        staging = self.staging.resolve()
        if absolute == staging or staging in absolute.parents:
            return absolute.relative_to(staging).as_posix() or "."
        for step_id, dep in self.dependencies.items():
            root = Path(dep).resolve()
            if absolute == root or root in absolute.parents:
                rel = absolute.relative_to(root).as_posix()
                return f"{DEPS}/{step_id}" + ("" if rel == "." else f"/{rel}")
        return str(absolute)

    def _dep_names(self) -> str:
        names = ", ".join(f"{DEPS}/{d}" for d in self.dependencies)
        return f"available: {names}" if names else "this step has no dependencies"


def split_path(path: str) -> tuple[str, ...]:
    """The parts of a model-given relative path; ToolException for absolute paths, '..', NUL."""
    if not isinstance(path, str) or not path.strip():
        raise ToolException("path must be a non-empty relative path such as 'impl.py'")
    if "\x00" in path:
        raise ToolException("path contains a NUL byte")
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
    return tuple(p for p in pure.parts if p != ".")


def _confine(root: Path, parts: tuple[str, ...], original: str) -> Path:
    base = root.resolve()
    target = base.joinpath(*parts).resolve()
    if target != base and base not in target.parents:
        raise ToolException(
            f"{original!r} leaves the allowed area (a symlink points outside "
            f"it); only your staging area and dependency artifacts are reachable"
        )
    return target


# --- the tools ------------------------------------------------------------------------------------


class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    path: str = Field(description="Relative path: 'impl.py', or 'deps/<step_id>/impl.py'.")
    start_line: int = Field(default=1, ge=1, description="First line to return (1-based).")
    max_lines: int | None = Field(default=None, ge=1, description="Most lines to return.")


class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    path: str = Field(description="Relative path in your staging area, e.g. 'impl.py'.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    path: str = Field(description="Relative path of a file in your staging area.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once.")
    new_text: str = Field(description="Replacement text (may be empty to delete).")


class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    path: str = Field(
        default=".",
        description="Directory to list: '.' (everything), a "
        "subdirectory, 'deps' or 'deps/<step_id>'.",
    )


def create_file_tools(scope: ToolScope) -> list[BaseTool]:
    """read_file, write_file, edit_file and list_files confined to `scope`.

    Refusals (paths outside the scope, binary files, oversized writes, ambiguous edits) come
    back to the model as error tool results whose message says what to do instead.
    """

    def read_file(path: str, start_line: int = 1, max_lines: int | None = None) -> str:
        """Read a UTF-8 text file: yours ('impl.py') or a dependency's ('deps/<step>/impl.py').

        Returns the text of the requested lines. Large files come back in parts: pass
        start_line / max_lines to read further. Binary files are refused.
        """
        target, _ = scope.resolve_read(path)
        text = _read_text(target, path)
        lines = text.splitlines(keepends=True)
        chosen = (
            lines[start_line - 1 :]
            if max_lines is None
            else lines[start_line - 1 : start_line - 1 + max_lines]
        )
        body, budget, count = [], scope.max_read_bytes, 0
        for line in chosen:
            size = len(line.encode("utf-8"))
            if size > budget:
                break
            body.append(line)
            budget -= size
            count += 1
        result: dict[str, Any] = {
            "path": scope.display(target),
            "total_lines": len(lines),
            "start_line": start_line,
            "content": "".join(body),
        }
        last = start_line + count - 1
        if last < len(lines):
            result["note"] = (
                f"showing lines {start_line}-{last} of {len(lines)}; call read_file "
                f"with start_line={last + 1} for more"
            )
        return to_json(result)

    def write_file(path: str, content: str) -> str:
        """Create or overwrite a file in your staging area with the complete given content.

        Parent directories are created. Paths are relative ('impl.py', 'pkg/util.py'); you
        cannot write outside your staging area or into dependency artifacts.
        """
        target = scope.resolve_write(path)
        data = content.encode("utf-8")
        _check_size(len(data), scope.max_write_bytes, path)
        if target.is_dir():
            raise ToolException(f"{path!r} is a directory; choose a file name inside it")
        created = not target.exists()
        unchanged = not created and target.read_bytes() == data
        if not unchanged:
            _write(target, data, path)
        result: dict[str, Any] = {
            "written": scope.display(target),
            "bytes": len(data),
            "lines": content.count("\n") + (0 if content.endswith("\n") or not content else 1),
            "created": created,
        }
        if unchanged:
            # Greedy decoding repeats itself; say so, or a failing file is rewritten forever.
            result["unchanged"] = True
            result["note"] = (
                "the file already had exactly this content: nothing changed. "
                "If its tests fail, change whichever is wrong: the code, or the test's "
                "expected values (check them against the task)."
            )
        _add_problems(result, path, content)
        return to_json(result)

    def edit_file(path: str, old_text: str, new_text: str) -> str:
        """Replace one exact occurrence of old_text with new_text in a file of your staging area.

        old_text must match exactly once, whitespace included: copy it from read_file and add
        surrounding lines when it is not unique. To rewrite a whole file use write_file.
        """
        target = scope.resolve_write(path)
        if not old_text:
            raise ToolException("old_text is empty; give the exact text to replace")
        text = _read_text(target, path)
        found = text.count(old_text)
        if found == 0:
            raise ToolException(
                f"old_text was not found in {path!r}; read_file it and copy the "
                f"exact text (whitespace and indentation matter)"
            )
        if found > 1:
            raise ToolException(
                f"old_text occurs {found} times in {path!r}; include more "
                f"surrounding lines so it matches exactly once"
            )
        updated = text.replace(old_text, new_text, 1).encode("utf-8")
        _check_size(len(updated), scope.max_write_bytes, path)
        _write(target, updated, path)
        result = {"edited": scope.display(target), "replacements": 1, "bytes": len(updated)}
        _add_problems(result, path, updated.decode("utf-8"))
        return to_json(result)

    def list_files(path: str = ".") -> str:
        """List files (recursively, with sizes) in your staging area and dependency artifacts.

        '.' lists everything: your files plus 'deps/<step_id>/…' of each dependency.
        """
        parts = split_path(path)
        roots: list[tuple[Path, Path]] = []
        if not parts:
            roots.append((scope.staging.resolve(), scope.staging.resolve()))
            roots += [(Path(d).resolve(), Path(d).resolve()) for d in scope.dependencies.values()]
        elif parts == (DEPS,):
            roots += [(Path(d).resolve(), Path(d).resolve()) for d in scope.dependencies.values()]
        else:
            target, root = scope.resolve_read(path)
            if not target.exists():
                raise ToolException(f"{path!r} does not exist; list_files('.') shows what does")
            roots.append((target, root))
        entries: list[dict[str, Any]] = []
        truncated = False
        for start, root in roots:
            for file in walk_files(start, root):
                if len(entries) >= scope.max_list_entries:
                    truncated = True
                    break
                entries.append({"path": scope.display(file), "bytes": file.stat().st_size})
        result: dict[str, Any] = {"files": entries, "count": len(entries)}
        if truncated:
            result["note"] = (
                f"only the first {scope.max_list_entries} entries; list a subdirectory for more"
            )
        return to_json(result)

    return [
        structured_tool(read_file, ReadFileArgs),
        structured_tool(write_file, WriteFileArgs),
        structured_tool(edit_file, EditFileArgs),
        structured_tool(list_files, ListFilesArgs),
    ]


def _add_problems(result: dict[str, Any], path: str, content: str) -> None:
    """Flag a Python file that does not parse or has empty functions, in the write's result."""
    if path.endswith(".py"):
        problems = python_problems(content)
        if problems:
            result["problems"] = problems


def structured_tool(func: Any, schema: type[BaseModel]) -> BaseTool:
    """A StructuredTool from `func` whose refusals and bad arguments become JSON error results."""
    return StructuredTool.from_function(
        func=func,
        name=func.__name__,
        description=func.__doc__,
        args_schema=schema,
        handle_tool_error=tool_error_json,
        handle_validation_error=validation_error_json,
    )


def tool_error_json(error: ToolException) -> str:
    """The model-facing content of a refused tool call: ``{"error": "..."}``."""
    return to_json({"error": str(error)})


def validation_error_json(error: ValidationError) -> str:
    """Bad arguments as a short, model-readable error (which field, what is wrong)."""
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    ]
    return to_json({"error": "invalid arguments: " + "; ".join(problems)})


def to_json(data: Mapping[str, Any]) -> str:
    """Compact JSON for the model (UTF-8 kept readable)."""
    return json.dumps(data, ensure_ascii=False)


def _check_size(size: int, cap: int, path: str) -> None:
    if size > cap:
        raise ToolException(
            f"refusing to write {size} bytes to {path!r}: the limit is {cap} "
            f"bytes per file; split the code into smaller modules"
        )


def _write(target: Path, data: bytes, shown: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target, data)
    except (NotADirectoryError, FileExistsError):
        raise ToolException(
            f"cannot write {shown!r}: a parent of it is a file, not a directory"
        ) from None
    except OSError as exc:
        raise ToolException(f"cannot write {shown!r}: {exc.strerror or exc}") from None


def _read_text(target: Path, shown: str) -> str:
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolException(
            f"{shown!r} does not exist; list_files shows the files you can read"
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolException(f"{shown!r} is a directory; use list_files to see inside it")
    if not stat.S_ISREG(info.st_mode):
        raise ToolException(
            f"{shown!r} is not a regular file (device, pipe or socket); it cannot be read"
        )
    if info.st_size > _MAX_SOURCE_BYTES:
        raise ToolException(
            f"{shown!r} is {info.st_size} bytes, too large to read; use "
            f"search_files to find the lines you need"
        )
    with open(target, "rb") as handle:
        data = handle.read()
    if b"\x00" in data[:_BINARY_SNIFF]:
        raise ToolException(
            f"{shown!r} is a binary file ({len(data)} bytes); read_file shows UTF-8 text only"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolException(
            f"{shown!r} is not UTF-8 text ({len(data)} bytes); read_file shows UTF-8 text only"
        ) from None


def walk_files(start: Path, root: Path) -> Iterator[Path]:
    """Regular files under `start` (sorted) that resolve inside `root`; caches skipped."""
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.startswith(TEMP_PREFIX):
                continue
            file = Path(dirpath) / name
            resolved = file.resolve()
            if (resolved == root or root in resolved.parents) and resolved.is_file():
                yield file
