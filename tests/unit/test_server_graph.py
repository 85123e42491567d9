"""The served graph (langgraph.json → `atom_agent.server:graph`): a factory per server call.

The real server is driven in tests/integration (test_langgraph_dev, test_langgraph_schemas);
here the factory is called the way the server calls it, with langgraph-sdk's runtime objects.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

from atom_agent import Context
from atom_agent.errors import ConfigError
from atom_agent.server import graph, run_context, served_context


def _execution(context: object) -> _ExecutionRuntime[object]:
    return _ExecutionRuntime(
        access_context="threads.create_run", user=None, store=InMemoryStore(), context=context
    )


@pytest.fixture
def server_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOM_WORKSPACE", str(tmp_path / "env_ws"))
    monkeypatch.setenv("ATOM_MAX_ATTEMPTS", "5")
    monkeypatch.setenv("ATOM_APPROVE_PLAN", "true")
    monkeypatch.setenv("ATOM_MODELS_FACTORY", "tests.unit.graph.factory:always_fails")
    return tmp_path


async def _served(runtime: Any, run: Any = None) -> Any:
    """Enter the factory as the server does (async), and run `run(graph)` inside it."""
    async with graph(runtime) as served:
        assert isinstance(served, CompiledStateGraph)
        return await asyncio.to_thread(run, served) if run else served


def test_a_run_gets_a_graph_over_the_context_the_client_sent(server_env: Path) -> None:
    sent = {"max_attempts": 3, "max_replans": 0, "approve_plan": False}  # False: the default
    out = asyncio.run(
        _served(_execution(sent), lambda g: g.invoke({"task": "add", "run_id": "r1"}, context=sent))
    )
    assert out["status"] == "failed"  # not interrupted: the client's approve_plan=False held
    attempts = server_env / "env_ws" / "runs" / "r1" / "steps" / "adder" / "attempts"
    assert len(list(attempts.iterdir())) == 3  # not the server's ATOM_MAX_ATTEMPTS=5


def test_schema_reads_get_the_servers_environment_as_defaults(server_env: Path) -> None:
    read = _ReadRuntime(access_context="assistants.read", user=None, store=InMemoryStore())
    served = asyncio.run(_served(read))
    schema = served.context_schema
    assert schema().max_attempts == 5 and schema().approve_plan is True
    assert schema(approve_plan=False).approve_plan is False
    props = served.get_context_jsonschema()["properties"]
    assert props["max_attempts"]["default"] == 5


def test_a_schema_read_opens_no_store_and_writes_nothing(server_env: Path) -> None:
    read = _ReadRuntime(access_context="assistants.read", user=None, store=InMemoryStore())

    def schemas(served: Any) -> None:
        served.get_input_jsonschema()
        served.get_output_jsonschema()
        served.get_context_jsonschema()
        served.get_graph()

    asyncio.run(_served(read, schemas))
    assert not (server_env / "env_ws").exists()  # the factory's workspace: not even created


def test_what_a_client_may_send_as_context() -> None:
    schema = served_context({"ATOM_MAX_ATTEMPTS": "4"})
    assert run_context(schema, None).max_attempts == 4
    assert run_context(schema, {"max_attempts": 2}).max_attempts == 2
    assert run_context(schema, Context(max_attempts=2)).max_attempts == 2
    with pytest.raises(ConfigError, match="unknown context fields \\['nope'\\]"):
        run_context(schema, {"nope": 1})
    with pytest.raises(ConfigError, match="must be an object"):
        run_context(schema, 42)
    with pytest.raises(ConfigError, match="max_attempts"):
        run_context(schema, {"max_attempts": 0})


def test_a_bad_server_environment_keeps_the_built_in_defaults() -> None:
    schema = served_context({"ATOM_MAX_ATTEMPTS": "many"})
    assert schema is Context


def test_a_served_run_with_a_budget_stops_at_its_first_call_the_budget_refuses(
    server_env: Path,
) -> None:
    # The plan's call spends the one token the client's budget allows: its contract call is
    # refused inside the planner, and the run ends there.
    sent = {"max_tokens": 1, "approve_plan": False, "candidate_zero": False}
    out = asyncio.run(
        _served(_execution(sent), lambda g: g.invoke({"task": "add", "run_id": "r1"}, context=sent))
    )
    assert out["status"] == "budget_exhausted"
    assert "planner stopped before its next model call" in out["stop_reason"]
    assert out.get("step_status") in (None, {})
