"""Conversation history cleaning: keep what the conversation said, drop provider bookkeeping."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from atom_agent.errors import WorkspaceError

# Keys of content blocks that carry provider state, not conversation: thought signatures (Gemini,
# Anthropic), block ids and stream indices. They are large, opaque and useless to a reader.
_BLOCK_DROP = frozenset({"signature", "thought_signature", "extras", "index", "id"})

_TYPES = {"system", "human", "ai", "tool"}


def clean_message(message: BaseMessage | Mapping[str, Any]) -> dict[str, Any]:
    """One message as a small JSON-safe dict: type, content, name, tool calls / results.

    Dropped: message ids, ``response_metadata``, ``usage_metadata``, ``additional_kwargs``
    (provider payloads, e.g. Gemini thought signatures) and signature fields inside content
    blocks. Kept: tool calls with their ids and tool results with ``tool_call_id`` and
    ``status`` — a tool call must stay pairable with its result.

    Args:
        message: a LangChain message, a ``messages_to_dict`` entry (``{"type", "data"}``) or an
            already-clean dict.

    Raises:
        WorkspaceError: the message has an unknown type or cannot be represented.
    """
    data = _as_mapping(message)
    kind = str(data.get("type", ""))
    if kind in ("AIMessageChunk", "ai_chunk"):
        kind = "ai"
    if kind not in _TYPES:
        raise WorkspaceError(f"cannot store a message of type {kind!r} in history.json")
    out: dict[str, Any] = {"type": kind, "content": _clean_content(data.get("content", ""))}
    if data.get("name"):
        out["name"] = str(data["name"])
    if kind == "ai":
        calls = [
            {"name": c.get("name"), "args": c.get("args", {}), "id": c.get("id")}
            for c in data.get("tool_calls") or []
        ]
        if calls:
            out["tool_calls"] = calls
        invalid = [
            {k: c.get(k) for k in ("name", "args", "id", "error")}
            for c in data.get("invalid_tool_calls") or []
        ]
        if invalid:
            out["invalid_tool_calls"] = invalid
    elif kind == "tool":
        out["tool_call_id"] = data.get("tool_call_id")
        out["status"] = data.get("status", "success")
    # Round-trip through JSON so a non-serialisable payload fails here, not half-way into a file.
    try:
        return dict(json.loads(json.dumps(out, ensure_ascii=False)))
    except (TypeError, ValueError) as exc:
        raise WorkspaceError(f"message is not JSON-serialisable: {exc}") from exc


def clean_messages(messages: Iterable[BaseMessage | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`clean_message` over a conversation."""
    return [clean_message(m) for m in messages]


def _as_mapping(message: BaseMessage | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(message, BaseMessage):
        return message.model_dump()
    if "data" in message and isinstance(message["data"], Mapping) and "type" in message:
        # The messages_to_dict envelope: {"type": "ai", "data": {...}}.
        return {**message["data"], "type": message["type"]}
    return message


def _clean_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks: list[Any] = []
        for block in content:
            if isinstance(block, Mapping):
                blocks.append({k: v for k, v in block.items() if k not in _BLOCK_DROP})
            else:
                blocks.append(block)
        return blocks
    return "" if content is None else str(content)
