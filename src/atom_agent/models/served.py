"""``openai:`` chat models, whose server may be any OpenAI-compatible one, and may misbehave."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import openai
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from atom_agent.errors import ContextWindowError, ModelError

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
    """

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

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._readable():
            try:
                return super()._generate(*args, **kwargs)
            except openai.LengthFinishReasonError as exc:
                return self._cut_off(exc)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._readable():
            try:
                return await super()._agenerate(*args, **kwargs)
            except openai.LengthFinishReasonError as exc:
                return self._cut_off(exc)

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
        with self._readable():
            yield from super()._stream(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        with self._readable():
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
