"""A conversation that outgrows the model's context window: drop earlier turns, or end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.errors import ContextWindowError
from atom_agent.prompts import prompt_text, register
from atom_agent.telemetry import emit

EARLIER_TURNS_NOTE = register(
    "EARLIER_TURNS_NOTE",
    "This attempt's earlier tool calls and results were left out: the conversation outgrew "
    "the model's context window. Your files are as you last wrote them (read_file shows them).",
)
"""In place of the turns dropped when the conversation outgrew the context window."""

OUT_OF_ROOM = register(
    "OUT_OF_ROOM",
    "The conversation no longer fits the model's context window: the attempt ends here.",
)
"""The final reply of an attempt whose conversation no longer fits at all."""


class ContextWindow(AgentMiddleware[AgentState[Any], Any, Any]):
    """On :class:`~atom_agent.errors.ContextWindowError`, send the attempt's prompt and last turn.

    The files keep the attempt's work; if even that does not fit, the attempt ends there (a
    final reply) and the reflector judges the files as they are.
    """

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The reply, to a shorter conversation when the full one does not fit."""
        try:
            return handler(request)
        except ContextWindowError:
            shorter = without_earlier_turns(request)
            if shorter is None:
                return out_of_room()
            try:
                return handler(shorter)
            except ContextWindowError:
                return out_of_room()


def without_earlier_turns(request: ModelRequest[Any]) -> ModelRequest[Any] | None:
    """`request` with only the attempt's prompt and its last turn (None if that is all it has).

    The last turn starts at the last AI reply, so a tool call keeps its result and the notes
    after it.
    """
    messages = request.messages
    last_ai = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    if last_ai <= 1:
        return None
    emit("executor.context_full", dropped=last_ai - 1)
    kept = [messages[0], HumanMessage(prompt_text("EARLIER_TURNS_NOTE")), *messages[last_ai:]]
    return request.override(messages=kept)


def out_of_room() -> ModelResponse[Any]:
    """A final reply that ends the attempt (the loop stops at a reply without tool calls)."""
    emit("executor.context_full", dropped=None)
    return ModelResponse(result=[AIMessage(content=prompt_text("OUT_OF_ROOM"))])
