"""The executor's steering: one middleware per behaviour, composed from the model profile."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
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

from atom_agent.models.profiles import SMALL, STANDARD
from atom_agent.nodes.executor.steering import steering
from atom_agent.nodes.executor.steering.chain import Steering, chained
from atom_agent.nodes.executor.steering.reask import Reask
from atom_agent.nodes.executor.steering.require_files import RequireFiles
from atom_agent.testing import ScriptedChatModel

SHARED = ["SalvageNote", "ExamplesNote", "Reask", "ContextWindow", "SalvageWrite", "RecoverCalls"]


def test_the_middlewares_and_their_order_come_from_the_profile() -> None:
    small, standard = steering(SMALL), steering(STANDARD)
    # Outermost first: request edits in this order, replies seen innermost first.
    assert [m.name for m in small] == [
        "StopAttempt", "RequireFiles", "NarrowTools", "Unstick", *SHARED,
    ]  # fmt: skip
    assert [m.name for m in standard] == ["StopAttempt", "RequireFiles", *SHARED]
    # A small model must keep working once its files exist, and samples when it re-asks.
    assert [m.keep_working for m in small if isinstance(m, RequireFiles)] == [True]
    assert [m.keep_working for m in standard if isinstance(m, RequireFiles)] == [False]
    # Forced tool choice only where the model's own grammar enforces it (small, embedded).
    assert [m.force for m in small if isinstance(m, RequireFiles)] == [True]
    assert [m.force for m in standard if isinstance(m, RequireFiles)] == [False]
    assert [m.resample for m in small if isinstance(m, Reask)] == [True]
    assert [m.resample for m in standard if isinstance(m, Reask)] == [False]


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

    def _seen(self, response: ModelResponse[Any]) -> ModelResponse[Any]:
        self.log.append(f"{self.label} out")
        return response

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        if self.retry:
            handler(self._edit(request))
        return self._seen(handler(self._edit(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        if self.retry:
            await handler(self._edit(request))
        return self._seen(await handler(self._edit(request)))


def _through(
    middleware: Callable[[list[str]], list[Any]], *, run_async: bool
) -> tuple[list[str], list[str]]:
    """What the middlewares logged and what the model was sent, in one agent run."""
    log: list[str] = []
    model = ScriptedChatModel(responses=[AIMessage("a"), AIMessage("b")])
    agent = create_agent(model, tools=[], middleware=middleware(log), checkpointer=False)
    state = {"messages": [HumanMessage("task")]}
    if run_async:
        asyncio.run(agent.ainvoke(state))
    else:
        agent.invoke(state)
    sent = [" ".join(str(m.content) for m in call.messages) for call in model.calls]
    return log, sent


@pytest.mark.parametrize("run_async", [False, True])
def test_chained_behaviours_run_as_langchain_runs_them_one_by_one(run_async: bool) -> None:
    def parts(log: list[str]) -> list[Any]:
        return [Recording("A", log), Recording("B", log, retry=True), Recording("C", log)]

    separate = _through(parts, run_async=run_async)
    together = _through(lambda log: chained(parts(log)), run_async=run_async)
    assert together == separate
    log, sent = together
    # The first is outermost: its edit comes first, it sees the reply last; B's retry re-runs C.
    assert log == ["A in", "B in", "C in", "C out", "B in", "C in", "C out", "B out", "A out"]
    assert sent == ["task A B C", "task A B C"]


def test_the_executor_agent_gets_one_middleware_for_its_model_call_behaviours() -> None:
    for profile in (SMALL, STANDARD):
        behaviours = steering(profile)
        given = chained(behaviours)
        assert [m.name for m in given] == ["Steering"]
        chain = given[0]
        assert isinstance(chain, Steering)
        assert [p.name for p in chain.parts] == [m.name for m in behaviours]


class Hook(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware with a hook of another kind (a graph node of its own)."""

    def before_model(self, state: AgentState[Any], runtime: Any) -> None:
        return None


def test_a_middleware_with_another_hook_is_not_chained() -> None:
    hook, a, b = Hook(), Recording("A", []), Recording("B", [])
    with pytest.raises(ValueError, match="Hook"):
        Steering([a, hook])
    given = chained([a, hook, b])
    assert [m.name for m in given] == ["Steering", "Hook"]
    assert chained([hook, a]) == [hook, a]  # one wrapper: nothing to chain
