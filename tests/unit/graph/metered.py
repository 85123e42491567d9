"""Scripted models whose every call costs a fixed number of tokens and seconds on a fake clock.

With them, the call a budget refuses is known exactly (tests/unit/graph/test_budget_calls.py,
tests/unit/batch/test_batch_budget.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from pydantic import BaseModel

from atom_agent import budget as budgets
from atom_agent.models.purpose import CallInfo
from atom_agent.testing import ScriptedChatModel, reply_of, tool_call

TOKENS = 100
"""What every metered call costs (input + output)."""
SECONDS = 10.0
"""How far every metered call moves the fake clock."""


class Clock:
    """A fake wall clock: only model calls move it."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Clock:
        """Make this the clock budgets are measured on (for the test)."""
        monkeypatch.setattr(budgets, "wall_clock", self)
        return self


def metered(model: ScriptedChatModel, clock: Clock) -> ScriptedChatModel:
    """`model` (scripted with `respond`): each reply costs TOKENS tokens, SECONDS on `clock`."""
    inner = model.respond
    assert inner is not None, "metered() needs a model scripted with respond="

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        reply: Any = reply_of(inner, messages, info)
        if isinstance(reply, str):
            reply = AIMessage(content=reply)
        elif not isinstance(reply, AIMessage) and isinstance(reply, BaseModel):
            reply = tool_call(type(reply).__name__, reply.model_dump(mode="json"))
        reply = reply.model_copy(deep=True)
        reply.usage_metadata = UsageMetadata(
            input_tokens=TOKENS - 10, output_tokens=10, total_tokens=TOKENS
        )
        clock.t += SECONDS
        return reply  # type: ignore[no-any-return]

    model.respond = respond
    return model
