"""The memory tools inside a real agent loop (langchain.agents.create_agent + a scripted model)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from atom_agent.errors import MissingSessionError
from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.tools.context import ToolContext
from atom_agent.tools.memory import MEMORY_TOOL_NAMES, MEMORY_TOOLS


def _run(manager: MemoryManager, session: SessionContext, *replies: Any) -> list[ToolMessage]:
    model = ScriptedChatModel(responses=[*replies, "done"])
    agent = create_agent(model, MEMORY_TOOLS, context_schema=ToolContext)
    context = ToolContext(session=session, memory=manager)
    result = agent.invoke({"messages": [HumanMessage("work")]}, context=context)
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def test_tool_schemas_are_the_contract(manager: MemoryManager, session: SessionContext) -> None:
    tools = MEMORY_TOOLS
    assert tuple(t.name for t in tools) == MEMORY_TOOL_NAMES
    specs = {t.name: convert_to_openai_tool(t)["function"] for t in tools}
    remember = specs["remember"]["parameters"]
    assert remember["required"] == ["content"]
    assert remember["properties"]["type"]["default"] == "fact"
    assert remember["properties"]["confidence"]["default"] == 0.8
    assert set(remember["properties"]) == {"content", "type", "confidence", "rationale"}
    recall = specs["recall"]["parameters"]
    assert set(recall["properties"]) == {
        "query",
        "type",
        "min_confidence",
        "limit",
        "include_superseded",
    }
    assert recall.get("required", []) == []
    assert (recall["properties"]["limit"]["default"], recall["properties"]["limit"]["maximum"]) == (
        10,
        50,
    )
    assert recall["properties"]["min_confidence"]["default"] == 0.5
    assert recall["properties"]["include_superseded"]["default"] is False
    assert recall["properties"]["type"]["default"] == "all"
    forget = specs["forget"]["parameters"]
    assert forget["required"] == ["memory_id"]
    assert set(forget["properties"]) == {"memory_id", "reason", "replacement_id"}
    assert all(len(spec["description"]) > 80 for spec in specs.values())


def test_remember_recall_forget_flow(manager: MemoryManager, session: SessionContext) -> None:
    results = _run(
        manager,
        session,
        tool_call(
            "remember", {"content": "Tests run with `pytest -q`", "type": "convention"}, id="c1"
        ),
        tool_call("recall", {"query": "how do I run the tests?"}, id="c2"),
    )
    assert [m.tool_call_id for m in results] == ["c1", "c2"]
    memory_id = json.loads(results[0].content)["memory_id"]  # type: ignore[arg-type]
    recalled = json.loads(results[1].content)  # type: ignore[arg-type]
    assert recalled["count"] == 1 and recalled["memories"][0]["id"] == memory_id

    results = _run(
        manager,
        session,
        tool_call("forget", {"memory_id": memory_id, "reason": "we use tox now"}, id="c3"),
        tool_call("recall", {"query": "how do I run the tests?"}, id="c4"),
        tool_call(
            "recall", {"query": "how do I run the tests?", "include_superseded": True}, id="c5"
        ),
    )
    assert json.loads(results[0].content)["forgotten"] is True  # type: ignore[arg-type]
    assert json.loads(results[1].content) == {"count": 0, "memories": []}  # type: ignore[arg-type]
    assert json.loads(results[2].content)["count"] == 1  # type: ignore[arg-type]


def test_bad_arguments_come_back_as_error_results_and_write_nothing(
    manager: MemoryManager, session: SessionContext
) -> None:
    results = _run(
        manager,
        session,
        tool_call("remember", {"content": "x" * 2001}, id="e1"),
        tool_call("remember", {"content": "ok", "type": "gossip"}, id="e2"),
        tool_call("remember", {"type": "fact"}, id="e3"),
        tool_call("recall", {"limit": 500}, id="e4"),
        tool_call("forget", {"memory_id": "missing"}, id="e5"),
    )
    assert all(m.status == "error" for m in results)
    text = [str(m.content) for m in results]
    assert "content is 2001 characters; the limit is 2000" in text[0]
    assert (
        "invalid arguments for remember: type: Input should be 'fact'" in text[1]
        and "'gossip'" in text[1]
    )
    assert "invalid arguments for remember: missing required argument 'content'." in text[2]
    assert "limit: Input should be less than or equal to 50 (got 500)" in text[3]
    assert "memory 'missing' not found in this project" in text[4] and "use recall" in text[4]
    assert all("Nothing was changed" in t for t in text)
    assert manager.export(session) == []


def test_confidence_outside_range_is_clamped_not_rejected(
    manager: MemoryManager, session: SessionContext
) -> None:
    (result,) = _run(manager, session, tool_call("remember", {"content": "sure", "confidence": 3}))
    assert manager.get(session, json.loads(result.content)["memory_id"]).confidence == 1.0  # type: ignore[arg-type]


def test_events_reach_the_graph_custom_stream(
    manager: MemoryManager, session: SessionContext
) -> None:
    model = ScriptedChatModel(
        responses=[
            tool_call("remember", {"content": "Streamed fact", "type": "fact"}),
            tool_call("recall", {"query": "streamed"}),
            "done",
        ]
    )
    agent = create_agent(model, MEMORY_TOOLS, context_schema=ToolContext)
    context = ToolContext(session=session, memory=manager)
    chunks = list(
        agent.stream({"messages": [HumanMessage("go")]}, stream_mode="custom", context=context)
    )
    names = [c["event"] for c in chunks if isinstance(c, dict)]
    assert names == ["memory.remember", "memory.recall"]
    assert chunks[0]["session_id"] == "s1" and chunks[0]["memory_type"] == "fact"


def test_sessions_work_concurrently(manager: MemoryManager, memory_tools: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def work(i: int) -> str:
        s = SessionContext(session_id=f"s{i}", project_id="shared")
        remember = memory_tools(manager, s)[0]
        return str(json.loads(remember.invoke({"content": f"note number {i}"}))["memory_id"])

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(work, range(16)))
    exported = manager.export(SessionContext(session_id="x", project_id="shared"))
    assert {r["id"] for r in exported} == set(ids)
    assert {r["session_id"] for r in exported} == {f"s{i}" for i in range(16)}


def test_filters_and_replacement_chain_through_the_tools(
    manager: MemoryManager, session: SessionContext
) -> None:
    results = _run(
        manager,
        session,
        tool_call("remember", {"content": "The API is served by FastAPI", "type": "fact"}),
        tool_call(
            "remember",
            {"content": "The API might move to Litestar", "type": "hypothesis", "confidence": 0.3},
        ),  # fmt: skip
        tool_call("remember", {"content": "Use FastAPI routers per module", "type": "decision"}),
    )
    fact, hypothesis, decision = (json.loads(str(m.content))["memory_id"] for m in results)

    results = _run(
        manager,
        session,
        tool_call("recall", {"query": "API framework", "type": "decision"}),
        tool_call("recall", {"query": "API framework", "type": "all", "min_confidence": 0.5}),
        tool_call("recall", {"query": "API framework", "min_confidence": 0.0, "limit": 1}),
        tool_call(
            "forget", {"memory_id": hypothesis, "reason": "decided", "replacement_id": decision}
        ),
        tool_call("recall", {"type": "hypothesis", "min_confidence": 0.0}),
        tool_call(
            "recall", {"type": "hypothesis", "min_confidence": 0.0, "include_superseded": True}
        ),
    )
    by_type, floor, limited, forgot, gone, kept = (json.loads(str(m.content)) for m in results)
    assert [m["id"] for m in by_type["memories"]] == [decision]
    assert {m["id"] for m in floor["memories"]} == {fact, decision}  # 0.3 is below the floor
    assert limited["count"] == 1
    assert forgot["forgotten"] is True and forgot["reason"] == "decided"
    assert gone == {"count": 0, "memories": []}
    assert [m["id"] for m in kept["memories"]] == [hypothesis]
    chain = manager.history(session, hypothesis)
    assert [r.id for r in chain] == [hypothesis, decision]


@pytest.mark.parametrize("name", ["remember", "recall", "forget"])
def test_every_tool_without_a_session_is_a_clear_error(
    manager: MemoryManager, name: str, memory_tools: Any
) -> None:
    tool = {t.name: t for t in memory_tools(manager, None)}[name]
    args = {"remember": {"content": "orphan"}, "recall": {}, "forget": {"memory_id": "m1"}}[name]
    with pytest.raises(MissingSessionError, match="needs a session context"):
        tool.invoke(args)
