"""File tools (read_file, write_file, edit_file, list_files) confined to an attempt's scope."""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from atom_agent.checks.source import python_problems
from atom_agent.tools.confine import (
    Located,
    WalkLimits,
    kind_of,
    locate,
    read_regular,
    shown_name,
    walk,
    write_atomic,
)
from atom_agent.workspace import AttemptRef, StepRef, Workspace

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

    def locate_write(self, path: str, *, make_dirs: bool = False) -> Located:
        """Where `path` is in the staging area for writing (the caller closes it)."""
        parts = split_path(path)
        if parts and parts[0] == DEPS:
            raise ToolException(
                f"{path!r} is a dependency artifact, which is read-only; write "
                f"your own files into the staging area (e.g. 'impl.py')"
            )
        if not parts:
            raise ToolException("write_file needs a file name, e.g. 'impl.py'")
        return locate(self.staging, parts, path, make_dirs=make_dirs)

    def resolve_write(self, path: str) -> Path:
        """The absolute path `path` names in the staging area (links inside followed).

        For handing a file to the sandbox runner; the file tools themselves never reopen a
        path by name: they work through the directory fds of :meth:`locate_write`.
        """
        with self.locate_write(path) as where:
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

    Refusals (paths outside the scope, binary or special files, oversized writes, ambiguous
    edits) come back to the model as error tool results whose message says what to do
    instead. Every path is opened through directory fds (:mod:`atom_agent.tools.confine`), so
    code running concurrently in the staging area cannot redirect a read or a write.
    """

    def read_file(path: str, start_line: int = 1, max_lines: int | None = None) -> str:
        """Read a UTF-8 text file: yours ('impl.py') or a dependency's ('deps/<step>/impl.py').

        Returns the text of the requested lines. Large files come back in parts: pass
        start_line / max_lines to read further. Binary files are refused.
        """
        where, prefix = scope.locate_read(path)
        with where:
            text = _decode(read_regular(where, path, _MAX_SOURCE_BYTES), path)
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
            "path": shown_path(prefix, where.parts),
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
        split_path(path)  # a bad path is named before a bad content
        data = _encode(content, "content")
        _check_size(len(data), scope.max_write_bytes, path)
        with scope.locate_write(path, make_dirs=True) as where:
            info = where.lstat()
            if info is not None and not stat.S_ISREG(info.st_mode):
                # Never opened: a FIFO would block, a device would never end.
                raise ToolException(
                    f"{path!r} is a directory; choose a file name inside it"
                    if stat.S_ISDIR(info.st_mode)
                    else f"{path!r} is {kind_of(info.st_mode)}, not a regular file; file "
                    f"tools only write regular files: use another name"
                )
            created = info is None
            unchanged = (
                info is not None
                and info.st_size == len(data)
                and read_regular(where, path, len(data)) == data
            )
            if not unchanged:
                write_atomic(where, data, path)
            shown = shown_path("", where.parts)
        result: dict[str, Any] = {
            "written": shown,
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
        split_path(path)
        if not old_text:
            raise ToolException("old_text is empty; give the exact text to replace")
        _encode(old_text, "old_text")
        _encode(new_text, "new_text")
        with scope.locate_write(path) as where:
            text = _decode(read_regular(where, path, _MAX_SOURCE_BYTES), path)
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
            write_atomic(where, updated, path)
            shown = shown_path("", where.parts)
        result = {"edited": shown, "replacements": 1, "bytes": len(updated)}
        _add_problems(result, path, updated.decode("utf-8"))
        return to_json(result)

    def list_files(path: str = ".") -> str:
        """List files (recursively, with sizes) in your staging area and dependency artifacts.

        '.' lists everything: your files plus 'deps/<step_id>/…' of each dependency.
        """
        entries: list[dict[str, Any]] = []
        limits = WalkLimits(max_scanned=max(20 * scope.max_list_entries, 10_000))
        truncated = False
        for where, prefix in scope_roots(scope, path):
            with where:
                if where.name is not None:
                    info = where.lstat()
                    if info is None:
                        raise ToolException(
                            f"{path!r} does not exist; list_files('.') shows what does"
                        )
                    if stat.S_ISREG(info.st_mode):
                        entries.append(
                            {"path": shown_path(prefix, where.parts), "bytes": info.st_size}
                        )
                        continue
                    if not stat.S_ISDIR(info.st_mode):
                        raise ToolException(f"{path!r} is {kind_of(info.st_mode)}; nothing to list")
                for entry in walk(where, limits, _SKIP_DIRS):
                    if len(entries) >= scope.max_list_entries:
                        truncated = True
                        break
                    entries.append({"path": shown_path(prefix, entry.parts), "bytes": entry.size})
            if truncated:
                break
        result: dict[str, Any] = {"files": entries, "count": len(entries)}
        if truncated:
            result["note"] = (
                f"only the first {scope.max_list_entries} entries; list a subdirectory for more"
            )
        elif limits.cut:
            result["note"] = f"listing incomplete: {limits.cut}"
        return to_json(result)

    return [
        structured_tool(read_file, ReadFileArgs),
        structured_tool(write_file, WriteFileArgs),
        structured_tool(edit_file, EditFileArgs),
        structured_tool(list_files, ListFilesArgs),
    ]


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
    """Compact JSON for the model (UTF-8 kept readable; lone surrogates escaped, never sent raw)."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True)
    return text


def _check_size(size: int, cap: int, path: str) -> None:
    if size > cap:
        raise ToolException(
            f"refusing to write {size} bytes to {path!r}: the limit is {cap} "
            f"bytes per file; split the code into smaller modules"
        )


def _encode(text: str, field_name: str) -> bytes:
    """`text` as UTF-8; a lone surrogate (from JSON's escapes) is a clear error, not a crash."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        column = exc.start - (text.rfind("\n", 0, exc.start) + 1) + 1
        raise ToolException(
            f"{field_name} has a lone UTF-16 surrogate ({ascii(text[exc.start])}) at line "
            f"{line}, column {column}, which cannot be saved as UTF-8; write the character "
            f"itself, or an escape such as '\\ud800' inside a string literal"
        ) from None


def _decode(data: bytes, shown: str) -> str:
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
