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
            return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
        with self._readable():
            return await super()._agenerate(*args, **kwargs)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        with self._readable():
            yield from super()._stream(*args, **kwargs)

    async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        with self._readable():
            async for chunk in super()._astream(*args, **kwargs):
                yield chunk
