"""What the response-side steering middlewares share: reading a reply's broken tool call."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import AIMessage


def last_reply(response: ModelResponse[Any]) -> AIMessage | None:
    """The model's reply in `response` (None if the last message is something else)."""
    last = response.result[-1] if response.result else None
    return last if isinstance(last, AIMessage) else None


def broken_call(response: ModelResponse[Any]) -> str | None:
    """Why the reply's tool call could not be used (None when it is fine, or an answer)."""
    last = last_reply(response)
    if last is None or last.tool_calls or not last.invalid_tool_calls:
        return None
    if cut_off(last):
        return "it was cut off at the token limit"
    return str(last.invalid_tool_calls[0].get("error") or "malformed arguments")[:200]


def cut_off(reply: AIMessage) -> bool:
    """Whether generation stopped at the token limit."""
    return (reply.response_metadata or {}).get("finish_reason") == "length"


def replaced(response: ModelResponse[Any], reply: AIMessage) -> ModelResponse[Any]:
    """`response` with `reply` in place of its last message."""
    return ModelResponse(
        result=[*response.result[:-1], reply], structured_response=response.structured_response
    )
