"""``openai:`` chat models, whose server may be any OpenAI-compatible one, and may misbehave."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from typing import Any

import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from openai.lib._parsing._completions import type_to_response_format_param
from pydantic import BaseModel

from atom_agent.budget import CallLimit, RunBudget, budget_of
from atom_agent.errors import BudgetExhaustedError, ContextWindowError, ModelError
from atom_agent.models.stopping import ReplyWatch, expecting_now, names_now

_CONTEXT_FULL = re.compile(
    r"context[ _](length|size|window)|maximum context|exceeds? the available context"
    r"|too many tokens|prompt is too long",
    re.IGNORECASE,
)
"""How OpenAI, vLLM, llama.cpp's server and LiteLLM say a prompt does not fit the model."""


class ServerReplyError(ModelError):
    """The model server answered something that is not an OpenAI chat reply."""


class ServedChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose unreadable server replies raise :class:`ServerReplyError`.

    A prompt the server refuses as too long for the model's context raises
    :class:`~atom_agent.errors.ContextWindowError`, as the embedded model's does.

    A server that is not quite OpenAI's (a proxy's HTML error page, a reply missing
    ``choices``) makes the client library fail deep inside its parsing with a ``TypeError``
    or a ``JSONDecodeError``; this says what happened, and where.

    With ``stop_early`` (set for a model on a ``base_url`` server), a reply that is not a tool
    call is streamed and watched as the embedded model's is (:class:`~atom_agent.models.
    stopping.ReplyWatch`): once it loops, or a plain-text reply asked for code alone holds its
    complete block, the stream is closed, which ends the decoding on the server. A
    self-hosted model that loops would otherwise decode to ``max_tokens`` (through
    llama-server, a judgement's JSON ran on to 2,048 tokens in 119 s). A structured reply is
    only cut when it loops, and then, like one cut off at ``max_tokens``, it does not parse.
    """

    stop_early: bool = False

    @contextmanager
    def _readable(self) -> Iterator[None]:
        try:
            yield
        except openai.BadRequestError as exc:
            if _CONTEXT_FULL.search(str(exc)):
                # The agent's context-window middleware drops earlier turns on this.
                raise ContextWindowError(f"the model server refused the prompt: {exc}") from exc
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            if isinstance(exc, ModelError):
                raise
            where = self.openai_api_base or "api.openai.com"
            raise ServerReplyError(
                f"the model server at {where} answered something that is not an OpenAI chat "
                f"reply ({type(exc).__name__}: {str(exc)[:120]})"
            ) from exc

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        limit = _limit(budget_of(run_manager), kwargs.get("max_tokens", self.max_tokens))
        model = self._within(limit, kwargs) if limit is not None else self
        with self._readable(), _in_time(limit):
            try:
                if self.stop_early and not kwargs.get("tools"):
                    result = model._watched(messages, stop, run_manager, kwargs)
                else:
                    result = super(ServedChatOpenAI, model)._generate(
                        messages, stop=stop, run_manager=run_manager, **kwargs
                    )
            except openai.LengthFinishReasonError as exc:
                result = self._cut_off(exc)
        return _checked(limit, result)

    def _watched(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> ChatResult:
        """The reply, streamed and ended once it has said all it will say."""
        schema = kwargs.get("response_format")
        structured = "response_format" in kwargs
        watch = ReplyWatch() if structured else ReplyWatch(expecting_now(), names_now())
        text, pieces, seen = "", 0, False
        info: dict[str, Any] = {}
        usage: UsageMetadata | None = None
        stream = (
            self._raw_pieces(messages, stop, kwargs)
            if structured
            else self._pieces(messages, stop, run_manager, kwargs)
        )
        try:
            for piece, used, finish in stream:
                seen = True
                usage = used or usage
                info.update({"finish_reason": finish} if finish else {})
                if piece:
                    text, pieces = text + piece, pieces + 1
                    if watch.done(text):
                        break
        finally:
            stream.close()  # closes the HTTP response: the server stops decoding
        if not seen:  # a server that does not stream: ask it as it answers
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        reply = AIMessage(content=watch.reply(text))
        if structured and not watch.reason:
            reply.additional_kwargs["parsed"] = _parsed(schema, text)
        if watch.reason:
            info["finish_reason"] = "stop"
            reply.response_metadata["ended_early"] = watch.reason
            usage = None  # the server's count comes with the last chunk, never sent
        reply.response_metadata.update(info)
        if usage is None:
            reply.response_metadata["usage_estimated"] = True
        reply.usage_metadata = usage or _estimated(messages, pieces)
        return ChatResult(generations=[ChatGeneration(message=reply, generation_info=info)])

    def _pieces(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> Generator[tuple[str, UsageMetadata | None, str | None], None, None]:
        """A plain-text reply as it streams: (text, usage, finish reason) per chunk."""
        stream = super()._stream(
            messages, stop=stop, run_manager=run_manager, stream_usage=True, **kwargs
        )
        try:
            for chunk in stream:
                content = chunk.message.content
                finish = (chunk.generation_info or {}).get("finish_reason")
                used = getattr(chunk.message, "usage_metadata", None)
                yield (content if isinstance(content, str) else ""), used, finish
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _raw_pieces(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> Generator[tuple[str, UsageMetadata | None, str | None], None, None]:
        """A structured reply as it streams, read from the client's own chunks.

        LangChain streams a structured reply through the SDK's parsing stream, which fails on
        a stream closed early; the whole reply is parsed here (:func:`_parsed`).
        """
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        # The wire form of a schema class, as the SDK's parse() sends it.
        payload["response_format"] = type_to_response_format_param(payload["response_format"])
        payload.update(stream=True, stream_options={"include_usage": True})
        with self.client.create(**payload) as stream:
            for chunk in stream:
                used = chunk.usage
                usage = (
                    UsageMetadata(
                        input_tokens=used.prompt_tokens,
                        output_tokens=used.completion_tokens,
                        total_tokens=used.total_tokens,
                    )  # fmt: skip
                    if used is not None
                    else None
                )
                choice = chunk.choices[0] if chunk.choices else None
                piece = (choice.delta.content or "") if choice is not None else ""
                yield piece, usage, choice.finish_reason if choice is not None else None

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        limit = _limit(budget_of(run_manager), kwargs.get("max_tokens", self.max_tokens))
        if limit is not None:
            self._within(limit, kwargs)  # the async client's retries stay as they are
        with self._readable(), _in_time(limit):
            try:
                result = await super()._agenerate(
                    messages, stop=stop, run_manager=run_manager, **kwargs
                )
            except openai.LengthFinishReasonError as exc:
                result = self._cut_off(exc)
        return _checked(limit, result)

    def _within(self, limit: CallLimit, kwargs: dict[str, Any]) -> ServedChatOpenAI:
        """This model for one call within the run's budget: its max_tokens and time capped.

        Sets the call's ``max_tokens`` and ``timeout`` in `kwargs` (the client takes both per
        request). The client library retries a request that timed out; a copy of this model
        on a client with only the retries that fit in the time left makes the call when
        fewer fit than the client would make (the same connection pool; nothing is rebuilt).
        """
        if limit.capped:
            kwargs["max_tokens"] = limit.max_tokens
        left = limit.seconds_left()
        if left is None:
            return self
        own = self.request_timeout
        timeout = min(float(own), left) if isinstance(own, int | float) else left
        limit.timeout_is_budget = timeout == left
        kwargs["timeout"] = max(timeout, 0.001)
        retries = self.max_retries if self.max_retries is not None else openai.DEFAULT_MAX_RETRIES
        fit = max(0, min(retries, int(left // max(timeout, 0.001)) - 1))
        if fit == retries or self.root_client is None:
            return self
        client = self.root_client.with_options(max_retries=fit)
        return self.model_copy(update={"root_client": client, "client": client.chat.completions})

    def _cut_off(self, exc: openai.LengthFinishReasonError) -> ChatResult:
        """A structured reply cut off at max_tokens, as the reply it is (it will not parse).

        The client library raises instead of returning it; as a reply, the caller's parser
        fails on it and the agent falls back as it does for any reply that does not parse
        (the planner's one-step plan), instead of the run ending in an error.
        """
        completion = getattr(exc, "completion", None)
        if completion is None:
            raise ModelError(f"the model server's reply was cut off at max_tokens: {exc}") from exc
        return self._create_chat_result(completion)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        # A streamed call is refused when the budget is spent, but not capped (nodes invoke).
        with self._readable():
            yield from super()._stream(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        with self._readable():
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk


def _parsed(schema: Any, text: str) -> Any:
    """A whole structured reply parsed as the SDK parses it (None: it does not match)."""
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate_json(text)
        return json.loads(text)
    except ValueError:  # pydantic's ValidationError is one
        return None


def _estimated(messages: list[BaseMessage], pieces: int) -> UsageMetadata:
    """Usage of a reply cut before the server counted it (an estimate).

    Streamed pieces (one token each on llama.cpp's server and vLLM), and the prompt at four
    characters a token; the reply's ``usage_estimated`` says so.
    """
    prompt = sum(len(str(m.content)) for m in messages) // 4
    return UsageMetadata(input_tokens=prompt, output_tokens=pieces,
                         total_tokens=prompt + pieces)  # fmt: skip


def _limit(budget: RunBudget | None, asked: Any) -> CallLimit | None:
    """The call's share of the run's budget (None: the run has none)."""
    if budget is None:
        return None
    # The prompt's tokens are the server's to count: the reply is capped at what is left.
    return CallLimit.of(budget, asked if isinstance(asked, int) else None)


@contextmanager
def _in_time(limit: CallLimit | None) -> Iterator[None]:
    """A request that timed out because the run's time was up: the budget's error."""
    try:
        yield
    except openai.APITimeoutError as exc:
        if limit is not None and limit.timeout_is_budget:
            raise BudgetExhaustedError(
                f"wall-clock budget: {limit.budget.elapsed():.1f}s of "
                f"{limit.budget.max_wall_seconds or 0.0:.1f}s elapsed (the request to the model "
                "server timed out at the budget's end)"
            ) from exc
        raise


def _checked(limit: CallLimit | None, result: ChatResult) -> ChatResult:
    """`result`, unless the budget's max_tokens cut its reply short (then the budget's error)."""
    if limit is None or not result.generations:
        return result
    reply = result.generations[0].message
    if isinstance(reply, AIMessage):
        limit.end(reply.response_metadata.get("finish_reason"), reply)
    return result
