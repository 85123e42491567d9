"""A reply whose tool call is broken (cut off, malformed JSON) is asked once more, told why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages.ai import add_usage

from atom_agent.prompts import prompt_text, register
from atom_agent.telemetry import emit

from ._calls import broken_call, last_reply, replaced
from ._request import with_note

BROKEN_CALL_NOTE = register(
    "BROKEN_CALL_NOTE",
    "Your last reply was not a complete tool call ({why}), so nothing was done. Call the "
    "tool again with a shorter reply: keep each file under 60 lines (fewer, distinct test "
    "cases; no repeated lines).",
)
"""After a reply whose tool call was cut off or malformed (the call is asked once more)."""


class Reask(AgentMiddleware[AgentState[Any], Any, Any]):
    """Ask once more after a broken tool call; the retry's reply also carries the wasted tokens.

    A broken call would end the loop as if the model had answered. The broken reply is not
    kept in the conversation (its text would only cost prompt); a note after the last message
    says what happened.
    """

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The reply, or after a broken call the reply to the re-ask."""
        response = handler(request)
        again = self._again(request, response)
        return response if again is None else spent_too(handler(again), response)

    def _again(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelRequest[Any] | None:
        """The request to send once more, or None when the reply is usable."""
        why = broken_call(response)
        if why is None:
            return None
        emit("executor.broken_call", reason=why)
        return with_note(request, prompt_text("BROKEN_CALL_NOTE").format(why=why))


REASKED = "atom_reasked"
"""``response_metadata`` key of a reply that answers a re-ask: the model's calls it stands for."""


def spent_too(response: ModelResponse[Any], wasted: ModelResponse[Any]) -> ModelResponse[Any]:
    """`response`, its reply also carrying the tokens of the `wasted` call (for budgets).

    The reply also counts the broken call it replaces (``REASKED``).
    """
    last, spent = last_reply(response), last_reply(wasted)
    if last is None or spent is None:
        return response
    before = int((spent.response_metadata or {}).get(REASKED, 0))
    update: dict[str, Any] = {
        "response_metadata": {**(last.response_metadata or {}), REASKED: before + 1}
    }
    if spent.usage_metadata is not None:
        update["usage_metadata"] = add_usage(last.usage_metadata, spent.usage_metadata)
    return replaced(response, last.model_copy(update=update))
