"""The agent's memory tools remember, recall and forget (docs/architecture.md), for one session."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.tools import BaseTool, ToolException
from pydantic import Field

from atom_agent.errors import MemoryNotFoundError, MemoryValidationError, ToolConfigError
from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import (
    MAX_RECALL_LIMIT,
    MemoryTypeName,
    RecallTypeName,
    require_session,
)
from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolRun, tool_context
from atom_agent.tools.results import structured_tool

logger = logging.getLogger(__name__)

MEMORY_TOOL_NAMES = ("remember", "recall", "forget")
"""Names of the trusted in-process memory tools (routed beside the sandboxed tools)."""


def _attempt(runtime: ToolRun, operation: str) -> tuple[MemoryManager, SessionContext]:
    """The run's memory manager and session (MissingSessionError without a session)."""
    context = tool_context(runtime)
    if not isinstance(context.memory, MemoryManager):
        raise ToolConfigError(f"{operation} needs the run's MemoryManager: pass memory=")
    return context.memory, require_session(context.session, operation)


def _call(tool: str, fn: Callable[[], dict[str, Any]]) -> str:
    """Run a memory operation; turn what the model can fix into an error tool result."""
    try:
        return json.dumps(fn(), ensure_ascii=False)
    except MemoryValidationError as exc:
        raise ToolException(
            f"{tool} rejected its arguments: {exc}. Nothing was changed; fix the "
            "arguments and call it again."
        ) from exc
    except MemoryNotFoundError as exc:
        raise ToolException(
            f"{exc}. Nothing was changed; use recall to find the right memory id."
        ) from exc


def remember(
    content: str,
    type: MemoryTypeName = "fact",
    confidence: float = 0.8,
    rationale: str | None = None,
    *,
    runtime: ToolRun,
) -> str:
    """Persist important information to long-term memory, for later steps and future runs.

    Use it when you discover something valuable: project facts (framework, dependencies,
    layout), conventions the tests or the user expect, a solution that worked, a decision and
    why, a risk or a known issue. Store one concise statement per call. What you remember is
    saved at once and can be found with `recall`.

    Args:
        content: What to remember: one concise, factual statement (max 2000 characters).
        type: Kind of memory.
        confidence: How sure you are, 0.0-1.0 (values outside are clamped).
        rationale: Why this is worth remembering.
        runtime: the run's context, injected by the agent (never sent by the model).
    """

    def run() -> dict[str, Any]:
        manager, s = _attempt(runtime, "remember")
        record = manager.remember(
            s,
            content,
            type=type,
            confidence=confidence,
            rationale=rationale,
            source_type="agent",
            importance=1.0,  # the agent's choice bypasses promotion
        )
        return {
            "remembered": True,
            "memory_id": record.id,
            "memory_type": record.type.value,
            "message": f"Stored {record.type.value} memory with id {record.id}",
        }

    return _call("remember", run)


def recall(
    query: str | None = None,
    type: RecallTypeName = "all",
    min_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5,
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL_LIMIT)] = 10,
    include_superseded: bool = False,
    *,
    runtime: ToolRun,
) -> str:
    """Search long-term memory for what was learned: facts, decisions, conventions, lessons.

    Give a query in plain words to get the most relevant memories; omit it to get the newest.
    Filter by type and a confidence floor. Each result has an id you can pass to `forget`.

    Args:
        query: What you are looking for, in words; omit to list the newest.
        type: Only memories of this kind.
        min_confidence: Only memories at least this confident (0-1).
        limit: Most memories to return (1-50).
        include_superseded: Also return forgotten (superseded) memories.
        runtime: the run's context, injected by the agent (never sent by the model).
    """

    def run() -> dict[str, Any]:
        manager, s = _attempt(runtime, "recall")
        found = manager.recall(
            s,
            query,
            type=type,
            min_confidence=min_confidence,
            limit=limit,
            include_superseded=include_superseded,
        )
        return {
            "count": len(found),
            "memories": [
                {
                    "id": r.id,
                    "content": r.content,
                    "type": r.type.value,
                    "confidence": round(r.confidence, 4),
                    "timestamp": r.created_at.isoformat(),
                }
                for r in found
            ],
        }

    return _call("recall", run)


def forget(
    memory_id: str,
    reason: str | None = None,
    replacement_id: str | None = None,
    *,
    runtime: ToolRun,
) -> str:
    """Mark a memory outdated or wrong (soft delete): kept for provenance, gone from recall.

    If a newer memory replaces it, remember the new one first and pass its id as
    replacement_id; both ids must exist.

    Args:
        memory_id: Id of the memory that is outdated or wrong.
        reason: Why it no longer holds.
        replacement_id: Id of an existing memory that replaces it (optional).
        runtime: the run's context, injected by the agent (never sent by the model).
    """

    def run() -> dict[str, Any]:
        manager, s = _attempt(runtime, "forget")
        manager.forget(s, memory_id, reason=reason, replacement_id=replacement_id)
        out: dict[str, Any] = {
            "forgotten": True,
            "memory_id": memory_id,
            "message": f"Memory {memory_id} has been superseded"
            + (f" by {replacement_id}" if replacement_id else ""),
        }
        if reason:
            out["reason"] = reason
        return out

    return _call("forget", run)


MEMORY_TOOLS: tuple[BaseTool, ...] = (
    structured_tool(remember),
    structured_tool(recall),
    structured_tool(forget),
)
"""`remember`, `recall` and `forget`, acting for the run's ``session`` on its ``memory``.

Bad arguments come back to the model as an error tool result (nothing is written); a missing
session raises :class:`~atom_agent.errors.MissingSessionError`, because no argument the model
could pass would fix it.
"""
