"""What the request-side steering middlewares share: a middleware that only edits the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import HumanMessage


class RequestEdit(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware that changes each model request before it is sent (`edit`), nothing else."""

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request to send instead of `request`: here `request` itself; subclasses edit it."""
        return request

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Send the edited request."""
        return handler(self.edit(request))


def with_note(request: ModelRequest[Any], note: str) -> ModelRequest[Any]:
    """`request` with `note` after its last message (for this call only)."""
    return request.override(messages=[*request.messages, HumanMessage(note)])
