"""The executor's steering: one middleware per behaviour, composed in one order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.nodes.executor.steering import steering
from atom_agent.nodes.executor.steering.chain import Steering
from atom_agent.testing import ScriptedChatModel


def test_the_middlewares_and_their_order() -> None:
    # Outermost first: request edits in this order, replies seen innermost first.
    assert [m.name for m in steering()] == [
        "StopAttempt", "RequireFiles", "SalvageNote", "Reask", "ContextWindow",
        "SalvageWrite", "RecoverCalls",
    ]  # fmt: skip


class Recording(AgentMiddleware[AgentState[Any], Any, Any]):
    """Notes each request it passes on (and edits it), each reply it sees; `retry` calls twice."""

    def __init__(self, label: str, log: list[str], *, retry: bool = False) -> None:
        super().__init__()
        self.label, self.log, self.retry = label, log, retry

    @property
    def name(self) -> str:
        return self.label

    def _edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        self.log.append(f"{self.label} in")
        return request.override(messages=[*request.messages, HumanMessage(self.label)])

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        if self.retry:
            handler(self._edit(request))
        response = handler(self._edit(request))
        self.log.append(f"{self.label} out")
        return response


def _through(middleware: Callable[[list[str]], list[Any]]) -> tuple[list[str], list[str]]:
    """What the middlewares logged and what the model was sent, in one agent run."""
    log: list[str] = []
    model = ScriptedChatModel(responses=[AIMessage("a"), AIMessage("b")])
    agent = create_agent(model, tools=[], middleware=middleware(log), checkpointer=False)
    agent.invoke({"messages": [HumanMessage("task")]})
    sent = [" ".join(str(m.content) for m in call.messages) for call in model.calls]
    return log, sent


def test_chained_behaviours_run_as_langchain_runs_them_one_by_one() -> None:
    def parts(log: list[str]) -> list[Any]:
        return [Recording("A", log), Recording("B", log, retry=True), Recording("C", log)]

    separate = _through(parts)
    together = _through(lambda log: [Steering(parts(log))])
    assert together == separate
    log, sent = together
    # The first is outermost: its edit comes first, it sees the reply last; B's retry re-runs C.
    assert log == ["A in", "B in", "C in", "C out", "B in", "C in", "C out", "B out", "A out"]
    assert sent == ["task A B C", "task A B C"]


def test_the_executor_agent_gets_one_middleware_for_its_model_call_behaviours() -> None:
    behaviours = steering()
    chain = Steering(behaviours)
    assert [p.name for p in chain.parts] == [m.name for m in behaviours]


class Hook(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware with a hook of another kind (a graph node of its own)."""

    def before_model(self, state: AgentState[Any], runtime: Any) -> None:
        return None


def test_a_middleware_with_another_hook_is_not_chained() -> None:
    with pytest.raises(ValueError, match="Hook"):
        Steering([Recording("A", []), Hook()])
