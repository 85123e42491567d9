"""`atom-agent batch --server`: tasks run by a real `langgraph dev`'s workers, resumable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.servers import langgraph_dev

from atom_agent import Context
from atom_agent.batch import BatchOptions, ResultsFile, run_batch

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with langgraph_dev(
        tmp_path,
        ATOM_WORKSPACE=str(tmp_path / "server-ws"),
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:batch_models",
    ) as url:
        yield url


def test_a_batch_submitted_to_langgraph_dev(server: str, tmp_path: Path) -> None:
    tasks = tmp_path / "srv.jsonl"
    tasks.write_text(
        "".join(json.dumps({"id": f"s{i}", "task": f"task {i}"}) + "\n" for i in range(3))
    )
    out = tmp_path / "results.jsonl"
    options = BatchOptions(Context(workspace=str(tmp_path / "local-ws")), 3, server=server)
    summary = run_batch(tasks, out, options)
    assert summary["by_status"] == {"done": 3}
    results = ResultsFile(out).read()
    assert {r["server"] for r in results.values()} == {server}
    # The server's workers did the work, in the server's workspace.
    for i in range(3):
        assert (tmp_path / f"server-ws/runs/srv.s{i}/report.md").exists()
    assert not (tmp_path / "local-ws" / "runs").exists()

    out.unlink()  # results lost: the threads on the server still know the outcome
    again = run_batch(tasks, out, options)
    assert again["by_status"] == {"done": 3}
    assert len(list((tmp_path / "server-ws/runs").iterdir())) == 3  # nothing ran twice
