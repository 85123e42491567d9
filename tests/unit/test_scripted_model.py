from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from atom_agent.testing import ScriptedChatModel, ScriptExhaustedError, tool_call


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_create_agent_executes_the_tool_and_feeds_the_result_back() -> None:
    model = ScriptedChatModel(
        responses=[tool_call("multiply", {"a": 6, "b": 7}, id="call-1"), "The answer is 42."]
    )
    agent = create_agent(model, tools=[multiply])
    result = agent.invoke({"messages": [HumanMessage("What is 6 times 7?")]})

    assert result["messages"][-1].content == "The answer is 42."
    assert len(model.calls) == 2
    assert model.calls[0].tool_names == ["multiply"]
    second = model.calls[1].messages
    tool_results = [m for m in second if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in tool_results] == [("call-1", "42")]


def test_structured_output_from_a_pydantic_reply() -> None:
    class Verdict(BaseModel):
        passed: bool
        reasons: list[str]

    model = ScriptedChatModel(responses=[Verdict(passed=False, reasons=["test_x fails"])])
    verdict = model.with_structured_output(Verdict).invoke("judge")
    assert verdict == Verdict(passed=False, reasons=["test_x fails"])
    assert model.calls[0].kwargs.get("tool_choice") == "any"


def test_responder_chooses_from_the_conversation() -> None:
    def echo(messages: list) -> str:  # type: ignore[type-arg]
        return f"you said {messages[-1].content}"

    model = ScriptedChatModel(respond=echo)
    assert model.invoke("ping").content == "you said ping"
    assert model.invoke([HumanMessage("pong")]).content == "you said pong"


def test_script_exhaustion_is_a_clear_error() -> None:
    model = ScriptedChatModel(responses=["only one"])
    model.invoke("a")
    with pytest.raises(ScriptExhaustedError, match="no reply left for call 2"):
        model.invoke("b")


def test_bad_script_entries_are_rejected() -> None:
    with pytest.raises(ValueError, match="reply 1 must be AIMessage"):
        ScriptedChatModel(responses=["ok", 42])


def test_usage_is_estimated_and_async_works() -> None:
    model = ScriptedChatModel(responses=[AIMessage(content="x" * 40)], latency_s=0.01)
    reply = asyncio.run(model.ainvoke("y" * 400))
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 10
    assert reply.usage_metadata["input_tokens"] == 100


def test_emit_outside_a_graph_only_logs(caplog: pytest.LogCaptureFixture) -> None:
    from langchain_core.runnables import RunnableLambda

    from atom_agent.telemetry import emit

    caplog.set_level("INFO", logger="atom_agent.events")
    assert emit("x.plain", n=1) == {"event": "x.plain", "n": 1}
    # Inside a runnable that is not a graph (a tool invoked directly) LangGraph raises KeyError.
    assert RunnableLambda(lambda _: emit("x.runnable", n=2)).invoke(None)["n"] == 2
    assert [r.getMessage().split()[0] for r in caplog.records] == ["x.plain", "x.runnable"]
