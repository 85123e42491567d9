"""`langgraph dev` serves the graph from langgraph.json; langgraph-sdk drives a run to the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from tests.servers import langgraph_dev

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with langgraph_dev(
        tmp_path,
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_slow_steps",
    ) as url:
        yield url


def test_a_run_streams_to_the_end_and_its_state_is_readable(server: str, tmp_path: Path) -> None:
    with get_sync_client(url=server) as client:
        _drive(client, tmp_path)


def _drive(client: SyncLangGraphClient, tmp_path: Path) -> None:
    assert any(a["graph_id"] == "atom_agent" for a in client.assistants.search())
    thread = client.threads.create()
    events: list[str] = []
    custom: list[dict[str, object]] = []
    for part in client.runs.stream(
        thread["thread_id"],
        "atom_agent",
        input={"task": "two things"},
        stream_mode=["updates", "custom"],
    ):
        events.append(part.event)
        if part.event == "custom" and isinstance(part.data, dict):
            custom.append(part.data)
    assert "error" not in events, events
    state = client.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert values["status"] == "done"
    assert values["step_status"] == {"one": "committed", "two": "committed"}
    names = {str(e.get("event")) for e in custom}
    assert {"plan.ready", "reflector.verdict", "run.finish"} <= names
    run_dir = tmp_path / "ws" / "runs" / str(values["run_id"])
    assert (run_dir / "report.md").exists()
