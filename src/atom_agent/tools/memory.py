"""The agent's memory tools remember, recall and forget (DESIGN §4), for one session."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from atom_agent.errors import MemoryNotFoundError, MemoryValidationError
from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import MAX_CONTENT_CHARS, MAX_RECALL_LIMIT, require_session
from atom_agent.session import SessionContext

logger = logging.getLogger(__name__)

MEMORY_TOOL_NAMES = ("remember", "recall", "forget")
"""Names of the trusted in-process memory tools (routed beside the sandboxed tools)."""

TypeName = Literal[
    "fact",
    "assumption",
    "hypothesis",
    "discovery",
    "risk",
    "unknown",
    "decision",
    "convention",
    "lesson_learned",
]
RecallType = Literal[
    "all",
    "fact",
    "assumption",
    "hypothesis",
    "discovery",
    "risk",
    "unknown",
    "decision",
    "convention",
    "lesson_learned",
]


class RememberArgs(BaseModel):
    """Arguments of `remember`."""

    content: str = Field(
        description=f"What to remember: one concise, factual statement (max {MAX_CONTENT_CHARS} "
        "characters)."
    )
    type: TypeName = Field(default="fact", description="Kind of memory.")
    confidence: float = Field(
        default=0.8, description="How sure you are, 0.0-1.0 (values outside are clamped)."
    )
    rationale: str | None = Field(default=None, description="Why this is worth remembering.")


class RecallArgs(BaseModel):
    """Arguments of `recall`."""

    query: str | None = Field(
        default=None, description="What you are looking for, in words; omit to list the newest."
    )
    type: RecallType = Field(default="all", description="Only memories of this kind.")
    min_confidence: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Only memories at least this confident (0-1)."
    )
    limit: int = Field(
        default=10, ge=1, le=MAX_RECALL_LIMIT, description="Most memories to return (1-50)."
    )
    include_superseded: bool = Field(
        default=False, description="Also return forgotten (superseded) memories."
    )


class ForgetArgs(BaseModel):
    """Arguments of `forget`."""

    memory_id: str = Field(description="Id of the memory that is outdated or wrong.")
    reason: str | None = Field(default=None, description="Why it no longer holds.")
    replacement_id: str | None = Field(
        default=None, description="Id of an existing memory that replaces it (optional)."
    )


def _validation_message(tool: str) -> Callable[[Any], str]:
    def handle(error: Any) -> str:
        if isinstance(error, ValidationError):
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                + (f" (got {e['input']!r})" if "input" in e and e["loc"] else "")
                for e in error.errors()
            )
        else:
            problems = str(error)
        return (
            f"Error: invalid arguments for {tool}: {problems}. Nothing was changed; fix the "
            "arguments and call it again."
        )

    return handle


def _call(tool: str, fn: Callable[[], dict[str, Any]]) -> str:
    """Run a memory operation; turn what the model can fix into an error tool result."""
    try:
        return json.dumps(fn(), ensure_ascii=False)
    except MemoryValidationError as exc:
        raise ToolException(
            f"Error: {tool} rejected its arguments: {exc}. Nothing was changed; fix the "
            "arguments and call it again."
        ) from exc
    except MemoryNotFoundError as exc:
        raise ToolException(
            f"Error: {exc}. Nothing was changed; use recall to find the right memory id."
        ) from exc


def create_memory_tools(manager: MemoryManager, session: SessionContext | None) -> list[BaseTool]:
    """The `remember`, `recall` and `forget` tools acting for `session` on `manager`.

    Bad arguments come back to the model as an error tool result (nothing is written); a missing
    session raises :class:`~atom_agent.errors.MissingSessionError` on the first call, because no
    argument the model could pass would fix it.
    """

    def remember(
        content: str, type: str = "fact", confidence: float = 0.8, rationale: str | None = None
    ) -> str:
        """Persist important information to long-term memory, for later steps and future runs.

        Use it when you discover something valuable: project facts (framework, dependencies,
        layout), conventions the tests or the user expect, a solution that worked, a decision and
        why, a risk or a known issue. Store one concise statement per call. What you remember is
        saved at once and can be found with `recall`.
        """

        def run() -> dict[str, Any]:
            s = require_session(session, "remember")
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
        type: str = "all",
        min_confidence: float = 0.5,
        limit: int = 10,
        include_superseded: bool = False,
    ) -> str:
        """Search long-term memory for what was learned: facts, decisions, conventions, lessons.

        Give a query in plain words to get the most relevant memories; omit it to get the newest.
        Filter by type and a confidence floor. Each result has an id you can pass to `forget`.
        """

        def run() -> dict[str, Any]:
            s = require_session(session, "recall")
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

    def forget(memory_id: str, reason: str | None = None, replacement_id: str | None = None) -> str:
        """Mark a memory outdated or wrong (soft delete): kept for provenance, gone from recall.

        If a newer memory replaces it, remember the new one first and pass its id as
        replacement_id; both ids must exist.
        """

        def run() -> dict[str, Any]:
            s = require_session(session, "forget")
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

    tools: list[BaseTool] = []
    for fn, schema in ((remember, RememberArgs), (recall, RecallArgs), (forget, ForgetArgs)):
        tools.append(
            StructuredTool.from_function(
                fn,
                name=fn.__name__,
                description=(fn.__doc__ or "").strip(),
                args_schema=schema,
                handle_tool_error=True,
                handle_validation_error=_validation_message(fn.__name__),
            )
        )
    return tools
