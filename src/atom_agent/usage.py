"""Token usage and estimated cost of model calls, from LangChain usage metadata."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

# USD per million tokens (input, output), list prices; a model not listed costs 0 here and
# is reported as such. Prefix match on the model name.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-3-pro": (2.0, 12.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.0),
    "claude-sonnet": (3.0, 15.0),
    "claude-haiku": (0.80, 4.0),
    "claude-opus": (15.0, 75.0),
}


def price_of(model_name: str) -> tuple[float, float]:
    """(input, output) USD per million tokens for `model_name`; (0, 0) when unknown or local."""
    name = model_name.split(":", 1)[-1].lower()
    for prefix in sorted(PRICES_PER_MTOK, key=len, reverse=True):
        if name.startswith(prefix) or f"/{prefix}" in name:
            return PRICES_PER_MTOK[prefix]
    return (0.0, 0.0)


def usage_of(messages: Iterable[BaseMessage], model_name: str = "") -> dict[str, float]:
    """Sum the usage of the AI messages in `messages`, with the estimated cost."""
    inp = out = calls = 0
    prefilled: int | None = None
    without = 0
    for message in messages:
        if isinstance(message, AIMessage) and message.usage_metadata:
            inp += int(message.usage_metadata.get("input_tokens", 0))
            out += int(message.usage_metadata.get("output_tokens", 0))
            calls += 1
            computed = message.response_metadata.get("prefill_computed")
            if isinstance(computed, int):
                prefilled = (prefilled or 0) + computed
                without += int(message.response_metadata.get("prefill_without_prefix_cache", 0))
    price_in, price_out = price_of(model_name)
    usage: dict[str, float] = {
        "input_tokens": inp,
        "output_tokens": out,
        "total_tokens": inp + out,
        "cost_usd": (inp * price_in + out * price_out) / 1_000_000,
        "model_calls": calls,
    }
    if prefilled is not None:
        # Prompt tokens the model really computed (the rest came from its KV cache): the
        # embedded model reports it; providers do not.
        usage["prefill_computed"] = prefilled
        usage["prefill_without_prefix_cache"] = without
    return usage


def model_name_of(model: object) -> str:
    """The model's name as providers expose it (``model``, ``model_name``), else its type."""
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class ModelCallHandler(BaseCallbackHandler, ABC):
    """A callback handler that sees every model call start and end.

    The run's budget and the per-purpose ledger: LangChain's chat-model callbacks in one
    place, two methods to write (every model the agent calls is a chat model).
    """

    run_inline = True

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A chat model call starts."""
        self.started(run_id, metadata or {})

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """A call ended with its replies."""
        replies = [
            g.message
            for generations in response.generations
            for g in generations
            if isinstance(g, ChatGeneration) and isinstance(g.message, AIMessage)
        ]
        self.ended(run_id, replies, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A call raised (a reply cut short by a budget carries it as ``error.reply``)."""
        reply = getattr(error, "reply", None)
        self.ended(run_id, [reply] if isinstance(reply, AIMessage) else [], error)

    @abstractmethod
    def started(self, run_id: UUID, metadata: Mapping[str, Any]) -> None:
        """Call `run_id` starts, with its config's metadata (may raise to refuse it)."""

    @abstractmethod
    def ended(self, run_id: UUID, replies: list[AIMessage], error: BaseException | None) -> None:
        """Call `run_id` ended: its replies, and what it raised (None when it returned)."""
