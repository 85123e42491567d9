"""`langgraph dev` publishes the graph's input / output schemas, so Studio can render a form."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_sync_client
from tests.servers import langgraph_dev

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp_path = tmp_path_factory.mktemp("schemas")
    with langgraph_dev(
        tmp_path,
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_slow_steps",
    ) as url:
        yield url


def test_input_and_output_schemas_are_published(server: str) -> None:
    with get_sync_client(url=server) as client:
        (assistant,) = [a for a in client.assistants.search() if a["graph_id"] == "atom_agent"]
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
    # typing.TypedDict on Python < 3.12 made LangGraph publish null here (issue 16).
    assert schemas["input_schema"] is not None
    assert "task" in schemas["input_schema"]["properties"]
    assert schemas["output_schema"] is not None
    assert {"task", "status", "plan"} <= set(schemas["output_schema"]["properties"])
    assert schemas["context_schema"] is not None
