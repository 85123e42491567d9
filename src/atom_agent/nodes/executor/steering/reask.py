"""A reply whose tool call is broken (cut off, malformed JSON) is asked once more, told why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages.ai import add_usage

from atom_agent.telemetry import emit

from ._calls import broken_call, last_reply, replaced
from ._request import with_note
from .unstick import unstuck

BROKEN_CALL_NOTE = (
    "Your last reply was not a complete tool call ({why}), so nothing was done. Call the "
    "tool again with a shorter reply: keep each file under 60 lines (fewer, distinct test "
    "cases; no repeated lines)."
)
"""After a reply whose tool call was cut off or malformed (the call is asked once more)."""


class Reask(AgentMiddleware[AgentState[Any], Any, Any]):
    """Ask once more after a broken tool call; the retry's reply also carries the wasted tokens.

    A broken call would end the loop as if the model had answered. The broken reply is not
    kept in the conversation (its text would only cost prompt); a note after the last message
    says what happened.

    Args:
        resample: the retry samples (:func:`.unstick.unstuck`) instead of repeating the same
            greedy reply (small models).
    """

    def __init__(self, *, resample: bool = False) -> None:
        super().__init__()
        self.resample = resample

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The reply, or after a broken call the reply to the re-ask."""
        response = handler(request)
        again = self._again(request, response)
        return response if again is None else spent_too(handler(again), response, reasked=True)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        response = await handler(request)
        again = self._again(request, response)
        if again is None:
            return response
        return spent_too(await handler(again), response, reasked=True)

    def _again(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelRequest[Any] | None:
        """The request to send once more, or None when the reply is usable."""
        why = broken_call(response)
        if why is None:
            return None
        emit("executor.broken_call", reason=why)
        again = with_note(request, BROKEN_CALL_NOTE.format(why=why))
        return unstuck(again) if self.resample else again


REASKED = "atom_reasked"
"""``response_metadata`` key of a reply that answers a re-ask: the model's calls it stands for."""


def spent_too(
    response: ModelResponse[Any], wasted: ModelResponse[Any], *, reasked: bool = False
) -> ModelResponse[Any]:
    """`response`, its reply also carrying the tokens of the `wasted` call (for budgets).

    With `reasked`, the reply also counts the broken call it replaces (``REASKED``).
    """
    last, spent = last_reply(response), last_reply(wasted)
    if last is None or spent is None:
        return response
    update: dict[str, Any] = {}
    if spent.usage_metadata is not None:
        update["usage_metadata"] = add_usage(last.usage_metadata, spent.usage_metadata)
    if reasked:
        before = int((spent.response_metadata or {}).get(REASKED, 0))
        update["response_metadata"] = {**(last.response_metadata or {}), REASKED: before + 1}
    return replaced(response, last.model_copy(update=update)) if update else response
