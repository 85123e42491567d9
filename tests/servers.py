"""Real servers for integration tests: `langgraph dev` on a free loopback port."""

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
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (never 2024, which these machines reserve)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port != 2024:
            return port


def wait_http_ok(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    """Poll `url` until it answers 200; fail with the server's log if it dies or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} did not come up:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def langgraph_dev(tmp_path: Path, **env_extra: str) -> Iterator[str]:
    """`langgraph dev` serving this repo's langgraph.json; yields its URL."""
    port = free_port()
    # Run from a copy of the config so the server's .langgraph_api/ lands in tmp_path.
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    shutil.copy(REPO / "langgraph.json", app / "langgraph.json")
    config = (app / "langgraph.json").read_text().replace('"."', f'"{REPO}"')
    (app / "langgraph.json").write_text(config.replace("./src/", f"{REPO}/src/"))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        **env_extra,
    }
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "langgraph"), "dev", "--host", "127.0.0.1",
                "--port", str(port), "--no-browser", "--no-reload",
            ],
            cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http_ok(f"{url}/ok", proc, log, timeout_s=120)
            yield url
        finally:
            stop(proc)


@contextmanager
def chroma_server(tmp_path: Path) -> Iterator[str]:
    """`chroma run` on a free loopback port with its data in `tmp_path`; yields its URL."""
    port = free_port()
    log = tmp_path / "chroma.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("chroma")), "run", "--path",
                str(tmp_path / "chroma-db"), "--host", "127.0.0.1", "--port", str(port),
            ],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            wait_http_ok(f"{url}/api/v2/heartbeat", proc, log, timeout_s=60)
            yield url
        finally:
            stop(proc)
