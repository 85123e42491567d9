"""`langgraph dev` serves the graph from langgraph.json; langgraph-sdk drives a run to the end."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    assert port != 2024
    return port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    # Run from a copy of the config dir so the server's .langgraph_api/ lands in tmp_path.
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(REPO / "langgraph.json", app / "langgraph.json")
    config = (app / "langgraph.json").read_text().replace('"."', f'"{REPO}"')
    config = config.replace("./src/", f"{REPO}/src/")
    (app / "langgraph.json").write_text(config)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ATOM_WORKSPACE": str(tmp_path / "ws"),
        "ATOM_MODELS_FACTORY": "tests.unit.graph.factory:two_slow_steps",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
    }
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "langgraph"), "dev", "--host", "127.0.0.1",
            "--port", str(port), "--no-browser", "--no-reload",
        ],
        cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "langgraph dev did not come up"
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


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
