"""Scripted chat models for testing graphs offline: replay replies, record what was sent."""

from __future__ import annotations

import inspect
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult, LLMResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

from atom_agent.errors import AtomAgentError
from atom_agent.models.purpose import CallInfo, call_info
from atom_agent.models.tool_schemas import openai_tool

Reply = AIMessage | str | BaseModel
"""What a script may hold: a message, plain text, or a structured-output instance."""

Responder = Callable[[list[BaseMessage]], Reply] | Callable[[list[BaseMessage], CallInfo], Reply]
"""Chooses a reply from the conversation so far and, when it takes a second argument, what the
call is for (:class:`~atom_agent.models.purpose.CallInfo`: purpose, step, attempt, read from
the call's metadata): a test keys on that, never on a prompt's wording."""


class ScriptExhaustedError(AtomAgentError):
    """The model was called more times than it had scripted replies."""


@dataclass(frozen=True)
class ScriptedCall:
    """One call the model received: the messages, the bound tools, and the other kwargs."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    info: CallInfo = field(default_factory=CallInfo)
    """What the call was for (purpose, step, attempt), from its metadata."""

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
    remote model would (an async call runs in a worker thread, LangChain's default).

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
    response_format: bool = False
    """It takes ``response_format`` as an OpenAI-compatible server does (a replay of a served
    run: structured replies are asked for as the served model was asked)."""
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

    def _next(
        self, messages: list[BaseMessage], kwargs: dict[str, Any], info: CallInfo
    ) -> AIMessage:
        tools = list(kwargs.pop("tools", []) or [])
        kwargs.pop("stop", None)
        with self._lock:
            self._calls.append(ScriptedCall(list(messages), tools, dict(kwargs), info))
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
            reply = reply_of(self.respond, list(messages), info)
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
        info = call_info(run_manager.metadata if run_manager is not None else None)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs, info))])


def reply_of(respond: Responder, messages: list[BaseMessage], info: CallInfo) -> Reply:
    """`respond`'s reply; it is given the call's info when it takes a second argument.

    For responders that wrap another responder (``reply_of(inner, messages, info)``).
    """
    try:
        takes_info = len(inspect.signature(respond).parameters) >= 2
    except (TypeError, ValueError):  # a callable without a readable signature
        takes_info = False
    return respond(messages, info) if takes_info else respond(messages)  # type: ignore[call-arg]


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


RECORDING_VERSION = 1
"""Format version of the files :class:`ExchangeRecorder` writes."""


class ExchangeRecorder(BaseCallbackHandler):
    """Records every reply a real model gives during a run, in order, for replay in tests.

    Attach it to the model's ``callbacks`` (``model.callbacks = [recorder]``) and run the
    task; :meth:`save` writes the replies (with their token usage and which tools each call
    had bound) to a JSON file that :func:`replaying` turns into a scripted model. A tool loop
    is then regression-tested on what a real model actually said, not on hand-written
    scripts.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._started: dict[UUID, dict[str, Any]] = {}
        self.calls: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """Note the call: its order, and the tools bound to it."""
        params = kwargs.get("invocation_params") or {}
        tools = [
            (t.get("function") or t).get("name", "")
            for t in params.get("tools") or []
            if isinstance(t, dict)
        ]
        with self._lock:
            self._started[run_id] = {"n": len(self._started), "tools": tools}

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Keep the reply."""
        generation = response.generations[0][0] if response.generations else None
        message = getattr(generation, "message", None)
        if not isinstance(message, AIMessage):
            return
        with self._lock:
            started = self._started.get(run_id, {"n": len(self._started), "tools": []})
            self.calls.append({**started, "reply": message_to_dict(message)})

    def save(self, path: str | Path, **about: Any) -> Path:
        """Write the recording (replies in call order) and `about` (task, model, …) as JSON."""
        with self._lock:
            calls = sorted(self.calls, key=lambda c: int(c["n"]))
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        body = {"version": RECORDING_VERSION, **about,
                "calls": [{"tools": c["tools"], "reply": c["reply"]} for c in calls]}  # fmt: skip
        target.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return target


class RecordingOutOfStepError(AtomAgentError):
    """A replayed run made a call the recording does not hold at that point: re-record it."""


def replaying(path: str | Path, *, model_name: str = "recorded") -> ScriptedChatModel:
    """A scripted model answering with a recording's replies, in the order they were given.

    Each call must be of the kind recorded there (a tool-loop turn with tools bound, or a
    call without): a run whose calls no longer line up with the recording raises
    :class:`RecordingOutOfStepError` naming the call, which is the sign to record again.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("version") != RECORDING_VERSION:
        raise RecordingOutOfStepError(f"{path}: recording version {data.get('version')!r}")
    calls: list[dict[str, Any]] = list(data["calls"])
    model = ScriptedChatModel(model_name=model_name, response_format=bool(data.get("served")))

    def respond(_messages: list[BaseMessage]) -> Reply:
        n = len(model.calls) - 1
        if n >= len(calls):
            raise RecordingOutOfStepError(
                f"{path}: call {n + 1} has no recorded reply (the recording holds {len(calls)})"
            )
        got, wanted = model.calls[n].tool_names, calls[n]["tools"]
        if bool(got) != bool(wanted):
            raise RecordingOutOfStepError(
                f"{path}: call {n + 1} had tools {got} bound, the recorded one {wanted}"
            )
        reply = messages_from_dict([calls[n]["reply"]])[0]
        assert isinstance(reply, AIMessage)
        return reply

    model.respond = respond
    return model
