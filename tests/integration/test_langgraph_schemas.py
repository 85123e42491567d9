"""The LangGraph surface through a real `langgraph dev` and `langgraph-sdk`.

Schemas render (Studio shows a form), a wrong resume payload is asked again instead of
sticking the thread, the client's context beats the server's ``ATOM_*`` environment, and
tool events reach a client that streams with ``stream_subgraphs=True``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient
from tests.servers import langgraph_dev

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp_path = tmp_path_factory.mktemp("schemas")
    with langgraph_dev(
        tmp_path,
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_steps_any_number_of_runs",
        ATOM_APPROVE_PLAN="true",  # the server's default; a client may say otherwise
        ATOM_MAX_ATTEMPTS="5",
    ) as url:
        yield url, tmp_path


def test_input_and_output_schemas_are_published(server: tuple[str, Path]) -> None:
    with get_sync_client(url=server[0]) as client:
        (assistant,) = [a for a in client.assistants.search() if a["graph_id"] == "atom_agent"]
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
    # typing.TypedDict on Python < 3.12 made LangGraph publish null here (issue 16).
    assert schemas["input_schema"] is not None
    assert "task" in schemas["input_schema"]["properties"]
    assert schemas["output_schema"] is not None
    assert {"task", "status", "plan", "report_path", "result_dir"} <= set(
        schemas["output_schema"]["properties"]
    )
    context = schemas["context_schema"]
    assert context is not None
    # The server's environment shows as the defaults a client may override.
    assert context["properties"]["approve_plan"]["default"] is True
    assert context["properties"]["max_attempts"]["default"] == 5


def _interrupt(client: SyncLangGraphClient, thread_id: str) -> dict[str, Any] | None:
    state = client.threads.get_state(thread_id)
    for task in state["tasks"]:
        for intr in task.get("interrupts") or []:
            return dict(intr["value"])
    return None


def test_a_wrong_resume_payload_re_asks_and_the_thread_finishes(server: tuple[str, Path]) -> None:
    url, _ = server
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "atom_agent", input={"task": "two things"})
        first = _interrupt(client, thread)  # ATOM_APPROVE_PLAN=true on the server
        assert first is not None and first["kind"] == "plan_approval" and "error" not in first
        for payload, error in [
            (42, "int 42 is not an answer to a plan approval"),
            (False, "bool False is not an answer"),
            ({"plans": []}, "is not an answer to a plan approval"),
            ({"plan": {"steps": [{"id": "x"}]}}, "the edited plan is invalid"),
        ]:
            client.runs.wait(thread, "atom_agent", command={"resume": payload})
            again = _interrupt(client, thread)
            assert again is not None and again["kind"] == "plan_approval", payload
            assert error in again["error"], again["error"]
        events: list[str] = []
        for part in client.runs.stream(
            thread, "atom_agent", command={"resume": True},
            stream_mode=["updates", "custom"], stream_subgraphs=True,
        ):  # fmt: skip
            if part.event.startswith("custom") and isinstance(part.data, dict):
                events.append(str(part.data.get("event")))
        assert _interrupt(client, thread) is None
        values = client.threads.get_state(thread)["values"]
    assert values["status"] == "done"
    assert values["step_status"] == {"one": "committed", "two": "committed"}
    # Tool events come from the executor's agent, a subgraph: stream_subgraphs=True shows them.
    assert "tool_call" in events and "tool_result" in events and "run.finish" in events
    assert Path(values["report_path"]).is_file()
    assert (Path(values["result_dir"]) / "tests").is_dir()


def test_the_clients_context_beats_the_servers_environment(server: tuple[str, Path]) -> None:
    url, _ = server
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        events: list[str] = []
        for part in client.runs.stream(
            thread, "atom_agent", input={"task": "two things"},
            context={"approve_plan": False},  # False is the default, and still wins
            stream_mode=["updates", "custom"],
        ):  # fmt: skip
            if part.event.startswith("custom") and isinstance(part.data, dict):
                events.append(str(part.data.get("event")))
        assert _interrupt(client, thread) is None
        values = client.threads.get_state(thread)["values"]
    assert values["status"] == "done"
    # Without stream_subgraphs only the outer graph's events arrive: no tool events.
    assert "run.finish" in events and "tool_call" not in events
