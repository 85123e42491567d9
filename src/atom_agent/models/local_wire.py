"""The local model's tool-call wire format: what can be kept of a cut-off ``write_file`` call.

The embedded model answers a tool call as ``{"name": "write_file", "arguments": {"path": ...,
"content": ...}}`` (see :mod:`atom_agent.models.local`); when generation stops at the token
limit that JSON is cut off and LangChain keeps it only as an invalid tool call's text.

A small model writing a test file often falls into repeating the same assertion until the
token limit cuts the call off: the reply is not a tool call, and asking again tends to end the
same way (each time a full reply's worth of generation). The file's first lines are usually
fine, though. :func:`salvage_write` keeps the complete lines, drops repeated test cases and
any unfinished statement at the end, so the attempt can go on with a file it can run; the
model is told what was kept.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

_NAME = re.compile(r'"name"\s*:\s*"write_file"')
_PATH = re.compile(r'"path"\s*:\s*"((?:[^"\\]|\\.)*)"')
_REPEATABLE = re.compile(r"assert\s|[(\[{].*,$")
"""Test-case lines a degenerate reply repeats: assertions and entries of a case list."""
_CONTENT = re.compile(r'"content"\s*:\s*"((?:[^"\\]|\\u[0-9a-fA-F]{4}|\\[^u])*)')


@dataclass(frozen=True)
class Salvaged:
    """The part of a cut-off write worth writing.

    Attributes:
        path: the file the call was writing.
        content: its complete lines, repeats and an unfinished last statement dropped.
        kept: how many lines `content` has.
        dropped_repeats: repeated test-case lines left out.
    """

    path: str
    content: str
    kept: int
    dropped_repeats: int


def salvage_write(text: str) -> Salvaged | None:
    """The usable part of a cut-off ``write_file`` reply, or None when nothing is usable.

    Only the local model's JSON tool protocol is read (``{"name": "write_file",
    "arguments": {"path": ..., "content": ...`` with the path before the content). A Python
    file is cut back until it parses, so what is written at least runs.
    """
    if not _NAME.search(text):
        return None
    path_match, content_match = _PATH.search(text), _CONTENT.search(text)
    if path_match is None or content_match is None or path_match.start() > content_match.start():
        return None
    try:
        path = json.loads(f'"{path_match.group(1)}"')
        content = json.loads(f'"{content_match.group(1)}"')
    except json.JSONDecodeError:
        return None
    lines = content.split("\n")
    if not text[content_match.end() :].lstrip().startswith('"'):
        lines = lines[:-1]  # the string was cut off: its last line is unfinished
    kept, dropped = _without_repeated_asserts(lines)
    if path.endswith(".py"):
        kept = _parsable_prefix(kept)
    while kept and not kept[-1].strip():
        kept.pop()
    if not any(line.strip() for line in kept):
        return None
    return Salvaged(path, "\n".join(kept) + "\n", len(kept), dropped)


def _without_repeated_asserts(lines: list[str]) -> tuple[list[str], int]:
    seen: set[str] = set()
    kept: list[str] = []
    dropped = 0
    for line in lines:
        key = line.strip()
        if _REPEATABLE.match(key) and key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(line)
    return kept, dropped


def _parsable_prefix(lines: list[str]) -> list[str]:
    """The longest prefix of `lines` that parses as Python (cut at a line end)."""
    for end in range(len(lines), 0, -1):
        try:
            ast.parse("\n".join(lines[:end]))
        except SyntaxError:
            continue
        return lines[:end]
    return []
