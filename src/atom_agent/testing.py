"""Scripted chat models for testing graphs offline: replay replies, record what was sent."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

from atom_agent.errors import AtomAgentError
from atom_agent.models.tool_schemas import openai_tool

Reply = AIMessage | str | BaseModel
"""What a script may hold: a message, plain text, or a structured-output instance."""

Responder = Callable[[list[BaseMessage]], Reply]
"""Chooses a reply from the conversation so far."""


class ScriptExhaustedError(AtomAgentError):
    """The model was called more times than it had scripted replies."""


@dataclass(frozen=True)
class ScriptedCall:
    """One call the model received: the messages, the bound tools, and the other kwargs."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools bound for this call."""
        return [t.get("function", {}).get("name", "") for t in self.tools]


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays a script, for tests of graphs, agents and tools.

    Each call returns the next scripted reply, or, when `respond` is given, whatever it returns
    for the conversation. Replies may be:

    - an ``AIMessage`` (with ``tool_calls`` to drive a ReAct loop),
    - a ``str`` (a plain final answer),
    - a pydantic instance: returned as a tool call named after its class, which is exactly what
      ``with_structured_output(ThatClass)`` parses.

    ``bind_tools`` and ``with_structured_output`` work as on a real provider; every call is
    recorded in :attr:`calls`. Usage metadata is estimated (≈ 4 chars per token) when the reply
    does not carry its own, so budget logic can be tested. ``latency_s`` sleeps per call, as a
    remote model would.

    Example:
        >>> model = ScriptedChatModel(responses=["hello"])
        >>> model.invoke("hi").content
        'hello'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Typed loosely so pydantic keeps replies as given (it would coerce a str into an AIMessage).
    responses: list[Any] = []
    """The script, consumed in order: AIMessage, str or pydantic instances."""
    respond: Responder | None = None
    """If set, chooses each reply from the messages instead of the script."""
    latency_s: float = 0.0
    """Seconds to wait per call."""
    cycle: bool = False
    """Start the script again when it runs out, instead of raising."""
    model_name: str = "scripted"
    """The name reports and cost estimates see (e.g. "gemini-2.5-pro" to test cost budgets)."""

    _index: int = PrivateAttr(default=0)

    @field_validator("responses")
    @classmethod
    def _check_replies(cls, value: list[Any]) -> list[Any]:
        for i, reply in enumerate(value):
            if not isinstance(reply, AIMessage | str | BaseModel):
                raise ValueError(f"reply {i} must be AIMessage, str or a pydantic model: {reply!r}")
        return value

    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[ScriptedCall]:
        """Every call received so far, in order."""
        with self._lock:
            return list(self._calls)

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used."""
        with self._lock:
            return max(0, len(self.responses) - self._index)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Record the tools (OpenAI format) and the tool choice with each call."""
        formatted = [openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools = list(kwargs.pop("tools", []) or [])
        kwargs.pop("stop", None)
        with self._lock:
            self._calls.append(ScriptedCall(list(messages), tools, dict(kwargs)))
            if self.respond is None:
                if self._index >= len(self.responses):
                    if not (self.cycle and self.responses):
                        raise ScriptExhaustedError(
                            f"ScriptedChatModel has no reply left for call {len(self._calls)}: "
                            f"the script held {len(self.responses)} replies"
                        )
                    self._index = 0
                reply: Reply = self.responses[self._index]
                self._index += 1
        if self.respond is not None:
            reply = self.respond(list(messages))
        return _to_message(reply, messages)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_s:
            time.sleep(self.latency_s)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs))])


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> AIMessage:
    """An AIMessage that calls one tool: ``tool_call("write_file", {"path": "impl.py", ...})``."""
    return tool_calls([(name, args or {})], ids=[id] if id else None)


def tool_calls(
    calls: Iterable[tuple[str, dict[str, Any]]], *, ids: Sequence[str] | None = None
) -> AIMessage:
    """An AIMessage that calls several tools in parallel."""
    pairs = list(calls)
    call_ids = list(ids) if ids else [f"call_{uuid.uuid4().hex[:12]}" for _ in pairs]
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": cid, "type": "tool_call"}
            for (name, args), cid in zip(pairs, call_ids, strict=True)
        ],
    )


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _to_message(reply: Reply, messages: list[BaseMessage]) -> AIMessage:
    if isinstance(reply, AIMessage):
        message = reply.model_copy(deep=True)
    elif isinstance(reply, str):
        message = AIMessage(content=reply)
    elif isinstance(reply, BaseModel):
        message = tool_call(type(reply).__name__, reply.model_dump(mode="json"))
    else:
        raise TypeError(
            f"a scripted reply must be AIMessage, str or a pydantic model, got {reply!r}"
        )
    if message.usage_metadata is None:
        prompt = sum(_estimate_tokens(str(m.content)) for m in messages)
        out = _estimate_tokens(str(message.content) + str(message.tool_calls))
        message.usage_metadata = UsageMetadata(
            input_tokens=prompt, output_tokens=out, total_tokens=prompt + out
        )
    if not message.id:
        message.id = f"scripted-{uuid.uuid4().hex[:12]}"
    return message
