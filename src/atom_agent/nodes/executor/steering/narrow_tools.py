"""Small models: only write_file (and read_file with dependencies) until the files exist."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest

from atom_agent.models.local import allowed_tools_choice

from ..attempt import attempt_of
from ._request import RequestEdit


class NarrowTools(RequestEdit):
    """Until the required files exist, a small model may only write them or read dependencies.

    A small model wanders (reading files that do not exist yet). Narrowed by ``tool_choice``,
    not by unbinding tools: the prompt stays the same.
    """

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Allow only the tools of :func:`narrowed` (when there are any)."""
        names = narrowed(request)
        if not names:
            return request
        return request.override(tool_choice=allowed_tools_choice(names))


def narrowed(request: ModelRequest[Any]) -> list[str]:
    """The tools a small model may call on this request ([] once the files exist, or none fit)."""
    if not request.tools:
        return []
    attempt = attempt_of(request.runtime)
    if attempt.files_written():
        return []
    allowed = {"write_file", *(("read_file",) if attempt.need_scope().dependencies else ())}
    present = (getattr(t, "name", None) for t in request.tools)
    return [n for n in present if isinstance(n, str) and n in allowed]
