"""``openai:`` chat models, whose server may be any OpenAI-compatible one, and may misbehave."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

from atom_agent.errors import ModelError


class ServerReplyError(ModelError):
    """The model server answered something that is not an OpenAI chat reply."""


class ServedChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose unreadable server replies raise :class:`ServerReplyError`.

    A server that is not quite OpenAI's (a proxy's HTML error page, a reply missing
    ``choices``) makes the client library fail deep inside its parsing with a ``TypeError``
    or a ``JSONDecodeError``; this says what happened, and where.
    """

    @contextmanager
    def _readable(self) -> Iterator[None]:
        try:
            yield
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
