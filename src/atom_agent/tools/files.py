"""File tools (read_file, write_file, edit_file, list_files) confined to an attempt's scope."""

from __future__ import annotations

import logging
import stat
from typing import Annotated, Any

from langchain_core.tools import BaseTool, ToolException
from pydantic import Field

from atom_agent.checks.source import python_problems
from atom_agent.tools.confine import WalkLimits, kind_of, read_regular, walk, write_atomic
from atom_agent.tools.context import ToolRun, tool_context
from atom_agent.tools.results import structured_tool, to_json
from atom_agent.tools.scope import SKIP_DIRS, ToolScope, scope_roots, shown_path, split_path

logger = logging.getLogger(__name__)

_BINARY_SNIFF = 8192
_MAX_SOURCE_BYTES = 8 * 1024 * 1024  # read_file never loads more than this into memory


# --- the tools ------------------------------------------------------------------------------------


def _scope(runtime: ToolRun) -> ToolScope:
    return tool_context(runtime).need_scope()


MIN_READ_LINES = 40
"""The fewest lines one read_file call returns (when the file has them)."""


def read_file(
    path: str,
    start_line: Annotated[int, Field(ge=1)] = 1,
    max_lines: Annotated[int | None, Field(ge=1)] = None,
    *,
    runtime: ToolRun,
) -> str:
    """Read a UTF-8 text file of your staging area, or of a dependency the prompt lists.

    Returns the whole file, or for a large file a part: pass start_line to read further.
    Binary files are refused.

    Args:
        path: Relative path, e.g. 'impl.py' (a dependency's files only at the paths
            the prompt gives under Files).
        start_line: First line to return (1-based).
        max_lines: Most lines to return (at least 40 are shown; default: all).
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    if max_lines is not None:
        # A model that pages one line a call spends its whole tool budget reading.
        max_lines = max(max_lines, MIN_READ_LINES)
    scope = _scope(runtime)
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


def write_file(path: str, content: str, *, runtime: ToolRun) -> str:
    """Create or overwrite a file in your staging area with the complete given content.

    Parent directories are created. Paths are relative ('impl.py', 'pkg/util.py'); you
    cannot write outside your staging area or into dependency artifacts.

    Args:
        path: Relative path in your staging area, e.g. 'impl.py'.
        content: The complete new content of the file (UTF-8 text).
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    scope = _scope(runtime)
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


def edit_file(path: str, old_text: str, new_text: str, *, runtime: ToolRun) -> str:
    """Replace one exact occurrence of old_text with new_text in a file of your staging area.

    old_text must match exactly once, whitespace included: copy it from read_file and add
    surrounding lines when it is not unique. To rewrite a whole file use write_file.

    Args:
        path: Relative path of a file in your staging area.
        old_text: Exact text to replace; must occur exactly once.
        new_text: Replacement text (may be empty to delete).
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    scope = _scope(runtime)
    split_path(path)
    if not old_text:
        raise ToolException("old_text is empty; give the exact text to replace")
    if old_text == new_text:
        raise ToolException("new_text is the same as old_text: that edit changes nothing")
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


def list_files(path: str = ".", *, runtime: ToolRun) -> str:
    """List files (recursively, with sizes) in your staging area and dependency artifacts.

    '.' lists everything: your files, and the files of the dependencies the prompt lists.

    Args:
        path: Directory to list: '.' (everything) or a subdirectory.
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    scope = _scope(runtime)
    entries: list[dict[str, Any]] = []
    limits = WalkLimits(max_scanned=max(20 * scope.max_list_entries, 10_000))
    truncated = False
    for where, prefix in scope_roots(scope, path):
        with where:
            if where.name is not None:
                info = where.lstat()
                if info is None:
                    raise ToolException(f"{path!r} does not exist; list_files('.') shows what does")
                if stat.S_ISREG(info.st_mode):
                    entries.append({"path": shown_path(prefix, where.parts), "bytes": info.st_size})
                    continue
                if not stat.S_ISDIR(info.st_mode):
                    raise ToolException(f"{path!r} is {kind_of(info.st_mode)}; nothing to list")
            for entry in walk(where, limits, SKIP_DIRS):
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


FILE_TOOLS: tuple[BaseTool, ...] = (
    structured_tool(read_file),
    structured_tool(write_file),
    structured_tool(edit_file),
    structured_tool(list_files),
)
"""read_file, write_file, edit_file and list_files, confined to the run's ``scope``.

Refusals (paths outside the scope, binary or special files, oversized writes, ambiguous
edits) come back to the model as error tool results whose message says what to do instead.
Every path is opened through directory fds (:mod:`atom_agent.tools.confine`), so code running
concurrently in the staging area cannot redirect a read or a write.
"""


def _add_problems(result: dict[str, Any], path: str, content: str) -> None:
    """Flag a Python file that does not parse or has empty functions, in the write's result."""
    if path.endswith(".py"):
        problems = python_problems(content)
        if problems:
            result["problems"] = problems


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
