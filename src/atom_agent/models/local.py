"""The embedded local chat model: llama.cpp on a GGUF file, with grammar-constrained tool calls.

Small local models follow a tool-call *format* unreliably, so this model never asks them to:
when tools are bound, decoding is constrained by a JSON schema (compiled to a llama.cpp
grammar) whose only valid outputs are ``{"name": <tool>, "arguments": {...}}`` for a bound tool
or ``{"answer": "..."}``. Every reply therefore parses, and `with_structured_output` (a forced
call of the schema "tool") always yields JSON of the right shape.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from langchain_core.utils.utils import LC_ID_PREFIX
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.v1 import BaseModel as BaseModelV1

from atom_agent.budget import CallLimit, budget_of
from atom_agent.errors import ContextWindowError, ModelError, ModelUnavailableError
from atom_agent.models.stopping import ReplyWatch, expecting_now, names_now
from atom_agent.models.tool_schemas import openai_tool
from atom_agent.models.weights import INSTALL_HINT, resolve_local_weights

logger = logging.getLogger(__name__)

ANSWER_KEY = "answer"
MAX_ARRAY_ITEMS = 12
"""Arrays in constrained replies hold at most this many items (see `_cap_arrays`)."""

_TOOL_PROMPT = """\
You can call tools. Reply with exactly one JSON object and nothing else:
- to call a tool: {{"name": "<tool name>", "arguments": {{...}}}}
- to give your final answer, when that is allowed: {{"answer": "<your answer>"}}

Tools:
{tools}"""


def llama_available() -> bool:
    """Whether the llama.cpp bindings are importable (the `local` extra is installed)."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


def default_threads() -> int:
    """The embedded model's threads: ``ATOM_LOCAL_THREADS``, else the cores this process may use.

    One thread per core; two decoding jobs on two cores decode faster on one thread each than
    taking turns on two (llama.cpp's threads wait for the slowest at every step).

    Raises:
        ModelUnavailableError: ``ATOM_LOCAL_THREADS`` is set but is not a whole number ≥ 1.
    """
    given = os.environ.get("ATOM_LOCAL_THREADS", "").strip()
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ModelUnavailableError(
                f"ATOM_LOCAL_THREADS={given!r}: must be a whole number of threads ≥ 1"
            )
        return int(given)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _load(path: str, n_ctx: int, n_threads: int, prefix_cache_mb: int = 0) -> Any:
    try:
        from llama_cpp.llama_cache import LlamaRAMCache

        from atom_agent.models._llama import MeteredLlama
    except ImportError as exc:
        raise ModelUnavailableError(f"llama-cpp-python is not installed: {INSTALL_HINT}") from exc
    started = time.perf_counter()
    llama = MeteredLlama(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        seed=0,
        verbose=False,
    )
    if prefix_cache_mb:
        llama.set_cache(LlamaRAMCache(capacity_bytes=prefix_cache_mb << 20))
    logger.info("loaded %s in %.1fs", path, time.perf_counter() - started)
    return llama


class LocalChatModel(BaseChatModel):
    """Chat model over an embedded llama.cpp model (default: Qwen2.5-Coder-1.5B-Instruct Q4_K_M).

    Supports ``bind_tools`` (JSON-schema-constrained tool calls), ``with_structured_output``,
    sync and async calls (async runs in a worker thread), ``stream`` (a chunk per decoded
    piece, see :meth:`_stream`), stop sequences, and reports token usage.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str | None = None
    """GGUF file; None = ``ATOM_LOCAL_MODEL_PATH`` or the verified built-in weights."""
    n_ctx: int = Field(default=8192, ge=512)
    """Context window in tokens."""
    n_threads: int | None = Field(default=None, ge=1)
    """CPU threads; None = ``ATOM_LOCAL_THREADS`` or every core this process may use."""
    max_tokens: int = Field(default=1024, ge=1)
    """Tokens generated per reply at most (tool calls that write files need room)."""
    stop: list[str] | None = None
    """Stop sequences of the calls that give none of their own (``invoke(..., stop=[...])``)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 is greedy (deterministic)."""
    stop_early: bool = False
    """End a plain-text reply that loops, and one asked for code alone
    (:func:`~atom_agent.models.stopping.code_replies`) once its code block is complete or
    its tests begin after the code it must define (:mod:`atom_agent.models.stopping`)."""
    prefix_cache_mb: int = Field(default=0, ge=0)
    """RAM kept for the KV states of earlier prompts (0: none), so a call whose prompt
    begins like an earlier one's prefills only what is new (llama.cpp's ``LlamaRAMCache``)."""
    seed: int = Field(default=0, ge=0)
    """Base of each call's sampling seed. A call's seed comes from this, the request (its
    messages and temperature) and how many times this object was made that request before,
    not from how many calls ran first: the same requests get the same samples run after
    run (up to llama.cpp's rounding, which depends a little on how a prompt was split into
    batches), a repeated request (another witness) another, and a change to one call of an
    agent no longer redraws every later sample (paired comparisons of agent versions)."""

    _resolved: str | None = PrivateAttr(default=None)
    # The weights (1.1 GB) are loaded on first use and belong to this object: whoever
    # builds the model (Resources, once per run or batch) shares it. A llama.cpp context
    # is not thread-safe, so calls through this object are serialised.
    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _asked: dict[bytes, int] = PrivateAttr(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "atom-local-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # What changes a reply is part of a cached request's key (a replay cache keeps apart
        # replies cut early and replies that were not).
        return {
            "model": self.model_name,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
            "stop_early": self.stop_early,
            **({"stop": self.stop} if self.stop else {}),
            **({"seed": self.seed} if self.seed else {}),
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        if stop is None and self.stop:
            params["ls_stop"] = self.stop
        return params

    def _call_seed(self, chat: list[dict[str, Any]], temperature: float) -> int:
        """This call's sampling seed: the base seed, the request, and its occurrence so far."""
        request = json.dumps([self.seed, chat, temperature], sort_keys=True, default=str)
        key = hashlib.sha256(request.encode()).digest()
        with self._lock:
            n = self._asked.get(key, 0)
            self._asked[key] = n + 1
        return int.from_bytes(hashlib.sha256(key + n.to_bytes(8, "big")).digest()[:4], "big")

    @property
    def model_name(self) -> str:
        """The GGUF file name, for reports."""
        return os.path.basename(self.model_path or "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")

    def _engine(self) -> tuple[Any, threading.Lock]:
        with self._lock:
            if self._llama is None:
                if self._resolved is None:
                    self._resolved = self.model_path or str(resolve_local_weights())
                threads = self.n_threads or default_threads()
                self._llama = _load(self._resolved, self.n_ctx, threads, self.prefix_cache_mb)
            return self._llama, self._lock

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; replies become grammar-constrained tool calls or a final answer.

        Args:
            tools: LangChain tools, pydantic models, functions or OpenAI tool dicts.
            tool_choice: ``None``/``"auto"`` (tool or answer), ``"any"``/``"required"``/``True``
                (some tool), a tool name or ``{"function": {"name": ...}}`` (that tool), ``"none"``.
            **kwargs: passed to each call.
        """
        formatted = [openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Structured output through a forced, grammar-constrained call of `schema`.

        Unlike the base implementation, a reply that could not be parsed (cut off at
        `max_tokens`) raises :class:`ModelError` instead of returning None. ``method``
        (``"function_calling"``, ``"json_schema"``, ``"json_mode"``) and ``strict`` are
        accepted and change nothing: every method is this call, whose grammar admits only
        JSON of the schema (always strict).
        """
        runnable = super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        if include_raw:
            return runnable
        # Instances of a pydantic.v1 schema pass too, as the base implementation returns them.
        checked = runnable | RunnableLambda(_require_parsed)
        return cast("Runnable[LanguageModelInput, dict[str, Any] | BaseModel]", checked)

    def _should_stream(
        self,
        *,
        async_api: bool,
        run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> bool:
        """Stream when asked to (``stream``/``astream``), not because a handler listens.

        An ``invoke`` under a streaming callback handler (LangGraph's "messages" stream mode)
        returns :meth:`_generate`'s reply as it is: LangChain would rebuild a streamed reply
        from its chunks, re-parsing a cut-off tool call (an ``invalid_tool_calls`` entry, whose
        partial JSON the agent salvages) into a call of a tool named "".
        """
        return bool(kwargs.get("stream")) and super()._should_stream(
            async_api=async_api, run_manager=run_manager, **kwargs
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply as it is decoded: one chunk per decoded piece, the last one completing it.

        A plain reply's chunks carry its text. A reply that may still be cut where its tests
        begin (`stop_early`) streams its text a few lines behind the decoding (what no cut
        can reach), the last chunk carrying the rest. A tool call or structured reply is one
        chunk, the last: its JSON is known once complete, and chunks of a reply cut off
        mid-JSON would add up to a call of a tool named "" (LangChain re-parses added chunks).
        So the chunks always add up to :meth:`_generate`'s reply. The last chunk carries the
        usage; a budget and the early stops hold while decoding, as in ``invoke``.
        """
        call = self._prepare(messages, stop, run_manager, kwargs)
        decoded = _Decoded()
        shown = _Shown(call)
        for piece in self._pieces(call, decoded):
            chunk = shown.chunk(piece)
            if chunk is not None:
                yield ChatGenerationChunk(message=chunk)
        yield ChatGenerationChunk(message=shown.last(self._reply(call, decoded)))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """The reply; each decoded piece goes to the callbacks as it comes (``on_llm_new_token``).

        The token is the piece as decoded (a progress view shows it); the chunk, when there
        is one, is :meth:`_stream`'s, with the reply's own id: LangGraph's ``messages``
        stream mode shows an ``invoke``'s reply growing from them, and they add up to it. A
        tool call or structured reply has no chunk until it is over (LangGraph then sends
        the whole reply).
        """
        call = self._prepare(messages, stop, run_manager, kwargs)
        decoded = _Decoded()
        reply_id = f"{LC_ID_PREFIX}-{run_manager.run_id}" if run_manager is not None else None
        shown = _Shown(call, reply_id)
        for piece in self._pieces(call, decoded):
            if run_manager is not None:
                chunk = shown.chunk(piece)
                run_manager.on_llm_new_token(
                    piece, chunk=ChatGenerationChunk(message=chunk) if chunk is not None else None
                )
        message = self._reply(call, decoded)
        message.id = reply_id
        if run_manager is not None and shown.sent_chunks:
            last = ChatGenerationChunk(message=shown.last(message))
            run_manager.on_llm_new_token("", chunk=last)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _prepare(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> _Call:
        """The llama.cpp request of a call, its early stops and its share of the run's budget.

        Raises:
            ModelError: an option this model does not take, or a temperature out of range.
        """
        kwargs = dict(kwargs)
        tools: list[dict[str, Any]] = list(kwargs.pop("tools", None) or [])
        allowed = _allowed_tools(tools, kwargs.pop("tool_choice", None))
        kwargs.pop("ls_structured_output_format", None)
        kwargs.pop("parallel_tool_calls", None)
        max_tokens = int(kwargs.pop("max_tokens", self.max_tokens))
        temperature = float(kwargs.pop("temperature", self.temperature))
        if not 0.0 <= temperature <= 2.0:
            raise ModelError(f"temperature must be within [0, 2], got {temperature}")
        if kwargs:
            raise ModelError(f"LocalChatModel got unsupported call options: {sorted(kwargs)}")
        chat = _render(messages, tools, allowed)
        # What llama.cpp's create_chat_completion is given (a grammar option would go here).
        request: dict[str, Any] = {
            "messages": chat,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": self.stop if stop is None else stop,
            "seed": self._call_seed(chat, temperature),
        }
        if allowed is not None:
            request["response_format"] = {"type": "json_object", "schema": _reply_schema(allowed)}
        llama, _ = self._engine()
        watching = self.stop_early and allowed is None
        watch = ReplyWatch(expecting=expecting_now(), names=names_now()) if watching else None
        # The run's budget (when it has one): never ask for more tokens than are left, and
        # stop decoding when its time is up.
        budget = budget_of(run_manager)
        limit = (
            CallLimit.of(
                budget, max_tokens, _prompt_tokens(llama, chat) if budget.max_tokens else 0
            )
            if budget is not None
            else None
        )
        if limit is not None and limit.max_tokens is not None:
            request["max_tokens"] = limit.max_tokens
        criteria = [_watching(llama, watch)] if watch is not None else []
        if limit is not None and limit.deadline is not None:
            criteria.append(limit.until_deadline())
        return _Call(chat, request, allowed, watch, limit, criteria)

    def _pieces(self, call: _Call, decoded: _Decoded) -> Iterator[str]:
        """Decode `call`, yielding each piece of text as it comes; `decoded` gets the rest.

        The engine stays locked until the reply is over (one llama.cpp context decodes one
        reply at a time); a consumer that stops early closes this generator, which unlocks it.

        Raises:
            ContextWindowError: the prompt does not fit the context window.
        """
        llama, lock = self._engine()
        # A greedy code reply must not depend on what ran before (see models/_llama.py).
        # A call with tools bound is a turn of a tool loop (or a structured reply): it
        # continues the KV state of its conversation's previous turn instead of
        # prefilling the whole conversation again on every call.
        fresh = call.request["temperature"] == 0.0 and call.allowed is None
        decoded.started = time.perf_counter()
        with lock:
            evaluated = getattr(llama, "evaluated", None)
            before = (len(evaluated), llama.restored) if evaluated is not None else (0, 0)
            stopping = (
                llama.stopping_with(_any_of(call.criteria))
                if call.criteria and hasattr(llama, "stopping_with")
                else nullcontext()
            )
            scratch = llama.from_scratch() if fresh and hasattr(llama, "from_scratch") else None
            try:
                with stopping, scratch or nullcontext():
                    out = llama.create_chat_completion(**call.request, stream=True)
                    if isinstance(out, dict):  # an engine that does not stream
                        decoded.whole(out)
                        yield decoded.text
                    else:
                        try:
                            for chunk in out:
                                piece = decoded.add(chunk)
                                if piece:
                                    yield piece
                        finally:
                            # A reader that stopped early: llama.cpp's generator ends here,
                            # under the lock, not whenever it is collected.
                            close = getattr(out, "close", None)
                            if close is not None:
                                close()
            except ValueError as exc:  # llama.cpp checks the prompt's length before decoding
                if "context window" in str(exc):
                    raise ContextWindowError(f"{exc} (n_ctx={self.n_ctx})") from exc
                raise
            decoded.ended = time.perf_counter()
            decoded.metered(llama, evaluated, before)

    def _reply(self, call: _Call, decoded: _Decoded) -> AIMessage:
        """The decoded reply as a message: parsed, with its usage and how it was made.

        Raises:
            BudgetExhaustedError: the run's budget cut the reply short.
        """
        text = decoded.text
        if call.watch is not None:
            text = call.watch.reply(text)  # ended where its tests began: the block closed there
        elapsed = decoded.ended - decoded.started
        logger.info(
            "local model: %d prompt + %d completion tokens in %.1fs (finish=%s)",
            decoded.prompt_tokens, decoded.completion_tokens, elapsed, decoded.finish,
        )  # fmt: skip
        message = _parse_reply(text, call.allowed, decoded.finish)
        message.usage_metadata = UsageMetadata(
            input_tokens=decoded.prompt_tokens,
            output_tokens=decoded.completion_tokens,
            total_tokens=decoded.prompt_tokens + decoded.completion_tokens,
        )
        meta: dict[str, Any] = {
            "model_name": self.model_name,
            "finish_reason": decoded.finish,
            "duration_s": round(elapsed, 3),
        }
        if decoded.prefilled is not None:
            meta["prefill_computed"] = decoded.prefilled
            meta["prefix_restored"] = decoded.restored
            meta["prefill_without_prefix_cache"] = decoded.without
        if call.watch is not None and call.watch.reason:
            meta["ended_early"] = call.watch.reason
        if decoded.prefilled_at > decoded.started:  # decoding time, prefill excluded
            meta["decode_s"] = round(decoded.ended - decoded.prefilled_at, 3)
        message.response_metadata = meta
        if call.limit is not None:
            call.limit.end(decoded.finish, message)  # raises when the budget cut the reply short
        return message


@dataclass
class _Call:
    """One call's request to llama.cpp, prepared (:meth:`LocalChatModel._prepare`)."""

    chat: list[dict[str, Any]]
    request: dict[str, Any]
    """``create_chat_completion``'s arguments (``stream`` aside)."""
    allowed: list[dict[str, Any]] | None
    """The tools the reply may call (None: free text)."""
    watch: ReplyWatch | None
    limit: CallLimit | None
    criteria: list[Callable[[Any, Any], bool]]
    """llama.cpp stopping criteria: the watch's, the budget's deadline."""


@dataclass
class _Decoded:
    """What decoding one reply gave: its text, how it ended, its tokens and timings."""

    text: str = ""
    finish: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    pieces: int = 0
    started: float = 0.0
    ended: float = 0.0
    prefilled_at: float = 0.0
    prefilled: int | None = None
    """The prompt tokens computed (the rest came from a KV cache); None: not metered."""
    restored: int = 0
    without: int = 0
    whole_usage: bool = False
    """The usage came with the completion (an engine that does not stream)."""

    def add(self, chunk: dict[str, Any]) -> str:
        """Take one streamed chunk of llama.cpp; its new text ('' for none)."""
        choice = (chunk.get("choices") or [{}])[0]
        piece = str((choice.get("delta") or {}).get("content") or "")
        self.text += piece
        self.pieces += bool(piece)
        self.finish = choice.get("finish_reason") or self.finish
        return piece

    def whole(self, out: dict[str, Any]) -> None:
        """Take a completion that came whole (an engine that does not stream)."""
        choice = out["choices"][0]
        self.text = choice["message"].get("content") or ""
        self.finish = choice.get("finish_reason")
        usage = out.get("usage") or {}
        self.prompt_tokens = int(usage.get("prompt_tokens", 0))
        self.completion_tokens = int(usage.get("completion_tokens", 0))
        self.pieces = 1
        self.whole_usage = True

    def metered(self, llama: Any, evaluated: list[int] | None, before: tuple[int, int]) -> None:
        """Tokens and prefill figures from the engine (a streamed reply reports no usage)."""
        self.prefilled_at = float(getattr(llama, "prefilled_at", 0.0) or 0.0)
        usage = getattr(llama, "last_usage", None)
        if not self.whole_usage:
            # A streamed reply: the engine counted its tokens (MeteredLlama), else one a piece.
            self.prompt_tokens, self.completion_tokens = (
                usage if isinstance(usage, tuple) else (0, self.pieces)
            )
        if evaluated is None:
            return
        # The first batch a call evaluates is the part of its prompt not in the KV cache.
        batches = evaluated[before[0] :]
        self.prefilled = batches[0] if batches else None
        self.restored = llama.restored - before[1]
        self.without = int(getattr(llama, "without_prefix_cache", 0) or 0)


class _Shown:
    """The chunks of a reply as it is decoded, adding up to the reply (see ``_stream``)."""

    def __init__(self, call: _Call, reply_id: str | None = None) -> None:
        self.chunked = call.allowed is None
        """A plain reply streams chunks; a tool call or structured reply only its last."""
        self.shows_text = self.chunked and call.watch is None
        """The pieces as decoded are the reply's text (nothing may cut its end)."""
        self.reply_id = reply_id
        self.decoded = ""
        self.sent = ""
        self.sent_chunks = 0

    def chunk(self, piece: str) -> AIMessageChunk | None:
        """The chunk of one decoded piece: its text, what of it is settled, or none.

        A reply the early stop watches may be cut where its tests begin, at the start of a
        line it has just written, and its end stripped: its chunks carry the text up to the
        last non-blank character before its last :data:`UNSETTLED_LINES` line starts, which
        no cut reaches, and the last chunk the rest (see ``_stream``).
        """
        if not self.chunked:
            return None
        self.sent_chunks += 1
        self.decoded += piece
        if self.shows_text:
            content = piece
        else:
            settled = _settled(self.decoded)
            content = settled[len(self.sent) :] if len(settled) > len(self.sent) else ""
        self.sent += content
        return AIMessageChunk(content=content, id=self.reply_id)

    def last(self, reply: AIMessage) -> AIMessageChunk:
        """The chunk that completes the reply: what the others did not carry, and the usage."""
        text = reply.content if isinstance(reply.content, str) else _text(reply.content)
        rest = text[len(self.sent) :] if text.startswith(self.sent) else text
        return AIMessageChunk(
            content=rest,
            id=self.reply_id,
            tool_call_chunks=[
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"]),
                    "id": c["id"],
                    "index": i,
                    "type": "tool_call_chunk",
                }
                for i, c in enumerate(reply.tool_calls)
            ],  # fmt: skip
            invalid_tool_calls=reply.invalid_tool_calls,
            usage_metadata=reply.usage_metadata,
            response_metadata=reply.response_metadata,
            chunk_position="last",
        )


UNSETTLED_LINES = 3
"""Lines at the end of a watched reply it streams only once they are followed by more: the
early stop cuts at the start of the line where tests begin, found within a line of it."""


def _settled(text: str) -> str:
    """What of a watched reply no early stop can cut.

    Its text up to its last :data:`UNSETTLED_LINES` line starts, without the whitespace before
    them (a cut reply's end is stripped).
    """
    at = len(text)
    for _ in range(UNSETTLED_LINES):
        at = text.rfind("\n", 0, at)
        if at < 0:
            return ""
    return text[:at].rstrip()


def _prompt_tokens(llama: Any, chat: list[dict[str, Any]]) -> int:
    """About how many tokens `chat` takes as a prompt (its texts, and the template's marks)."""
    marks = 5 * len(chat) + 3  # <|im_start|>role ... <|im_end|> per message, the reply's start
    if not hasattr(llama, "tokenize"):
        return marks + sum(len(str(m.get("content", ""))) // 4 for m in chat)
    return marks + sum(
        len(llama.tokenize(str(m.get("content", "")).encode(), add_bos=False, special=True))
        for m in chat
    )


def _any_of(criteria: list[Callable[..., bool]]) -> Callable[[Any, Any], bool]:
    """One llama.cpp stopping criterion: true when one of `criteria` is (each sees every token)."""

    def criterion(input_ids: Any, logits: Any) -> bool:
        return any([c(input_ids, logits) for c in criteria])  # noqa: C419 - call every one

    return criterion


def _watching(llama: Any, watch: ReplyWatch) -> Callable[[Any, Any], bool]:
    """A llama.cpp stopping criterion: the reply so far, decoded, shown to `watch`.

    llama.cpp calls it with the token ids so far (the prompt's, then the reply's); the first
    call marks where the reply starts.
    """
    seen: list[int] = []  # [where the reply starts, how many of its tokens are decoded]
    reply = bytearray()

    def criterion(input_ids: Any, _logits: Any) -> bool:
        if not seen:
            seen.extend([len(input_ids), len(input_ids)])
        reply.extend(llama.detokenize(list(input_ids[seen[1] :])))
        seen[1] = len(input_ids)
        return watch.done(reply.decode("utf-8", errors="ignore"))

    return criterion


def _require_parsed(value: Any) -> dict[str, Any] | BaseModel | BaseModelV1:
    if value is None:
        raise ModelError(
            "the local model's structured reply was cut off before it was complete; "
            "raise max_tokens (LocalChatModel(max_tokens=...)) or simplify the schema"
        )
    if not isinstance(value, dict | BaseModel | BaseModelV1):
        raise ModelError(f"structured output parsed to {type(value).__name__}, not an object")
    return value


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool["function"]["name"])


def _allowed_tools(
    tools: list[dict[str, Any]], choice: str | dict[str, Any] | bool | None
) -> list[dict[str, Any]] | None:
    """The tools the reply may call, or None for free text.

    An ``{"answer": True}`` entry in the result means a final answer is allowed too.
    """
    if not tools or choice == "none":
        return None
    names = {_tool_name(t): t for t in tools}
    if choice in (None, "auto"):
        return [*tools, {"answer": True}]
    if choice in ("any", "required", True):
        return list(tools)
    wanted = choice.get("function", {}).get("name") if isinstance(choice, dict) else choice
    if not isinstance(wanted, str) or wanted not in names:
        raise ModelError(f"tool_choice {choice!r} names no bound tool (bound: {sorted(names)})")
    return [names[wanted]]


def _cap_arrays(schema: Any, max_items: int) -> Any:
    """A copy of `schema` where every array has at most `max_items` items.

    Greedy decoding of a small model can repeat list items until the token limit, which cuts
    the JSON off; a cap in the grammar forces the array (and so the reply) to close.
    """
    if isinstance(schema, list):
        return [_cap_arrays(item, max_items) for item in schema]
    if not isinstance(schema, dict):
        return schema
    capped = {key: _cap_arrays(value, max_items) for key, value in schema.items()}
    if capped.get("type") == "array" and "maxItems" not in capped:
        capped["maxItems"] = max(max_items, int(capped.get("minItems", 0)))
    return capped


def _reply_schema(
    allowed: list[dict[str, Any]], max_items: int = MAX_ARRAY_ITEMS
) -> dict[str, Any]:
    options: list[dict[str, Any]] = []
    for entry in allowed:
        if "answer" in entry:
            options.append(
                {
                    "type": "object",
                    "properties": {ANSWER_KEY: {"type": "string"}},
                    "required": [ANSWER_KEY],
                }
            )
            continue
        params = entry["function"].get("parameters") or {"type": "object", "properties": {}}
        params = _cap_arrays(params, max_items)
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": _tool_name(entry)}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def _text(content: str | list[str | dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else str(p.get("text", "")) for p in content]
    return "".join(parts)


def _render(
    messages: list[BaseMessage], tools: list[dict[str, Any]], allowed: list[dict[str, Any]] | None
) -> list[dict[str, str]]:
    """LangChain messages → llama.cpp chat messages, tool protocol spelled out in JSON."""
    system = [_text(m.content) for m in messages if isinstance(m, SystemMessage)]
    if allowed is not None:
        # Every bound tool is listed whatever this call allows (the grammar enforces that):
        # an unchanged system prompt lets llama.cpp reuse its KV cache of the conversation.
        listed = "\n".join(
            f"- {_tool_name(t)}: {t['function'].get('description', '').strip()}\n"
            f"  arguments (JSON schema): {json.dumps(t['function'].get('parameters', {}))}"
            for t in tools
        )
        system.append(_TOOL_PROMPT.format(tools=listed))
    chat: list[dict[str, str]] = []
    if system:
        chat.append({"role": "system", "content": "\n\n".join(s for s in system if s)})
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, AIMessage):
            if m.tool_calls:
                body = "\n".join(
                    json.dumps({"name": c["name"], "arguments": c["args"]}) for c in m.tool_calls
                )
            elif allowed is not None:
                body = json.dumps({ANSWER_KEY: _text(m.content)})
            else:
                body = _text(m.content)
            chat.append({"role": "assistant", "content": body})
        elif isinstance(m, ToolMessage):
            name = m.name or "tool"
            chat.append(
                {
                    "role": "user",
                    "content": f"Result of tool `{name}` (call {m.tool_call_id}):\n"
                    + _text(m.content),
                }
            )
        else:
            chat.append({"role": "user", "content": _text(m.content)})
    return chat


def _parse_reply(text: str, allowed: list[dict[str, Any]] | None, finish: str | None) -> AIMessage:
    if allowed is None:
        return AIMessage(content=text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # Only possible when generation stopped early (max_tokens): report it, don't guess.
        return AIMessage(
            content=text,
            invalid_tool_calls=[
                {
                    "name": None,
                    "args": text,
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "error": f"reply is not complete JSON (finish_reason={finish}): {exc}",
                    "type": "invalid_tool_call",
                }
            ],
        )
    if isinstance(data, dict) and "name" in data:
        return AIMessage(
            content="",
            tool_calls=[
                {
                    "name": str(data["name"]),
                    "args": dict(data.get("arguments") or {}),
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "tool_call",
                }
            ],
        )
    return AIMessage(content=str(data.get(ANSWER_KEY, "")) if isinstance(data, dict) else text)
