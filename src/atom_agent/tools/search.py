"""Search tools: search_files over the attempt's scope, search_memory over long-term memory."""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import Iterator
from typing import Annotated, Any

import regex as regex_engine
from langchain_core.tools import BaseTool, ToolException
from pydantic import Field

from atom_agent.errors import ToolConfigError
from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import RecallTypeName, require_session
from atom_agent.tools.confine import WalkLimits, read_at, walk
from atom_agent.tools.context import ToolRun, tool_context
from atom_agent.tools.results import structured_tool, to_json
from atom_agent.tools.scope import SKIP_DIRS, ToolScope, scope_roots, shown_path

logger = logging.getLogger(__name__)

_MAX_FILE_BYTES = 2 * 1024 * 1024  # larger files are skipped (generated data, not code)
_MAX_LINE_CHARS = 4000  # lines are matched and shown up to this length
_SHOWN_CHARS = 240


def search_files(
    pattern: str,
    regex: bool = False,
    path: str = ".",
    ignore_case: bool = False,
    *,
    runtime: ToolRun,
) -> str:
    """Find lines in your files and your dependencies' files; returns 'file:line: text'.

    Literal text by default; set regex=true for a Python regular expression. Binary and
    very large files are skipped. Results are capped: narrow the pattern or the path.

    Args:
        pattern: Text or regular expression to find.
        regex: Treat pattern as a Python regular expression (default: literal text).
        path: Where to search: '.' (everything), or a file or directory.
        ignore_case: Match case-insensitively.
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    context = tool_context(runtime)
    scope, search_seconds = context.need_scope(), context.search_seconds
    max_results = context.max_search_results
    matcher = _matcher(pattern, regex=regex, ignore_case=ignore_case)
    deadline = time.monotonic() + search_seconds
    matches: list[str] = []
    total = 0
    for shown, number, line in _lines(scope, path):
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            found = matcher.search(line, timeout=remaining, concurrent=True)
        except TimeoutError:
            raise ToolException(
                f"the search took longer than {search_seconds:g}s (it was at "
                f"{shown}:{number}); a pattern with nested repetition such as (a+)+ "
                f"backtracks without end: simplify it, narrow the path, or pass "
                f"regex=false for literal text"
            ) from None
        if found:
            total += 1
            if len(matches) < max_results:
                text = line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + "…"
                matches.append(f"{shown}:{number}: {text}")
    result: dict[str, Any] = {"pattern": pattern, "count": total, "matches": matches}
    if total > len(matches):
        result["note"] = (
            f"showing {len(matches)} of {total} matches; narrow the pattern or the path"
        )
    return to_json(result)


def _matcher(pattern: str, *, regex: bool, ignore_case: bool) -> regex_engine.Pattern[str]:
    """`pattern` compiled (escaped unless `regex`); a bad one is a ToolException for the model.

    The `regex` engine, not `re`: its matching takes a timeout (and releases the GIL), so a
    pattern that backtracks exponentially, e.g. (a+)+$, cannot hang the run.
    """
    if not pattern:
        raise ToolException("pattern is empty; give the text to look for")
    flags = regex_engine.IGNORECASE if ignore_case else 0
    try:
        return regex_engine.compile(pattern if regex else regex_engine.escape(pattern), flags)
    except (regex_engine.error, ValueError, OverflowError, RecursionError) as exc:
        raise ToolException(
            f"invalid regular expression {pattern!r}: {exc}; fix it, or "
            f"pass regex=false to search for the literal text"
        ) from None


def search_memory(
    query: str,
    type: RecallTypeName = "all",
    limit: Annotated[int, Field(ge=1, le=20)] = 5,
    *,
    runtime: ToolRun,
) -> str:
    """Search long-term memory by meaning: facts, conventions, lessons of earlier work.

    Returns the most relevant memories of earlier steps and runs, with their type and
    confidence. Read-only; use `remember` to store something new.

    Args:
        query: What you want to know, in words (searched by meaning).
        type: Only memories of this kind.
        limit: Most memories to return (1-20).
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    context = tool_context(runtime)
    memory: MemoryManager | None = context.memory
    if memory is None:
        raise ToolConfigError("search_memory needs the run's long-term memory: pass memory=")
    session = require_session(context.session, "search_memory")
    if not query.strip():
        raise ToolException("query is empty; say what you want to know")
    records = memory.recall(session, query, type=type, limit=limit)
    return to_json(
        {
            "query": query,
            "count": len(records),
            "memories": [
                {
                    "id": r.id,
                    "content": r.content,
                    "type": str(r.type),
                    "confidence": round(float(r.confidence), 3),
                    "created_at": r.created_at.isoformat(),
                }
                for r in records
            ],
        }
    )


SEARCH_TOOLS: tuple[BaseTool, ...] = (
    structured_tool(search_files),
    structured_tool(search_memory),
)
"""search_files over the run's scope; search_memory over its long-term memory (read-only)."""


def _lines(scope: ToolScope, path: str) -> Iterator[tuple[str, int, str]]:
    """``(shown path, line number, line)`` of the text files `path` covers, through dir fds.

    Binary, unreadable and very large files are skipped; lines are cut at a length that
    bounds the work of any one match.
    """
    limits = WalkLimits()
    for where, prefix in scope_roots(scope, path):
        with where:
            if where.name is not None:
                info = where.lstat()
                if info is None:
                    raise ToolException(f"{path!r} does not exist; list_files shows what does")
                if stat.S_ISREG(info.st_mode):
                    shown = shown_path(prefix, where.parts)
                    yield from _file_lines(where.dir_fd, where.name, shown)
                    continue
            for entry in walk(where, limits, SKIP_DIRS):
                if entry.size <= _MAX_FILE_BYTES:
                    shown = shown_path(prefix, entry.parts)
                    yield from _file_lines(entry.dir_fd, entry.name, shown)


def _file_lines(dir_fd: int, name: str, shown: str) -> Iterator[tuple[str, int, str]]:
    try:
        data = read_at(dir_fd, name, shown, _MAX_FILE_BYTES)
    except ToolException:
        return  # a special file, or one that changed meanwhile: not searched
    if b"\x00" in data[:8192]:
        return  # binary
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        yield shown, number, line[:_MAX_LINE_CHARS]
