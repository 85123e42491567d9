"""llama.cpp's own OpenAI-compatible server, `llama-server`, on the embedded model.

`make install` builds the binary (scripts/build-llama-server.sh) and writes its path to
`<venv>/llama-server.path`; ``ATOM_LLAMA_SERVER`` overrides it. Tests that use the `llama_server`
fixture skip, saying why, when there is no binary or no model. A test module brings the fixture
in with ``from tests.llama_server import LlamaServer, llama_server_fixture  # noqa: F401``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.servers import free_port, stop, wait_http_ok

ENV_VAR = "ATOM_LLAMA_SERVER"
PATH_FILE = Path(sys.prefix) / "llama-server.path"
ERROR_FILE = Path(sys.prefix) / "llama-server.error"
CONTEXT = 8192
THREADS = int(os.environ.get("ATOM_LOCAL_THREADS") or 2)
"""The server's threads: one each when two test workers may decode at once (tests/conftest.py)."""
READY_TIMEOUT_S = 120


def find_binary() -> Path:
    """`ATOM_LLAMA_SERVER`, else the binary `make install` recorded; skips when there is none."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        path = Path(override).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.skip(f"{ENV_VAR}={override!r} is not an executable file")
        return path
    if PATH_FILE.is_file():
        path = Path(PATH_FILE.read_text().strip())
        if path.is_file() and os.access(path, os.X_OK):
            return path
        pytest.skip(f"llama-server recorded in {PATH_FILE} is gone ({path}): run `make install`")
    if ERROR_FILE.is_file():
        pytest.skip(ERROR_FILE.read_text().strip())
    pytest.skip(
        f"llama-server not built: run `make install` (scripts/build-llama-server.sh) "
        f"or set {ENV_VAR}=/path/to/llama-server"
    )


def find_model() -> Path:
    """The embedded GGUF; skips when the local extra (its weights) is not installed."""
    from atom_agent.errors import ModelUnavailableError
    from atom_agent.models.weights import resolve_local_weights

    try:
        return resolve_local_weights()
    except ModelUnavailableError as exc:
        pytest.skip(f"no local model for llama-server: {exc}")


def optional_flags(binary: Path) -> list[str]:
    """Flags this build supports that the fixture wants, read from its --help."""
    help_text = subprocess.run(
        [str(binary), "--help"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    flags: list[str] = []
    if "--no-webui" in help_text:
        flags.append("--no-webui")
    if "--cache-reuse" in help_text:
        # Reuse cached KV chunks of >= 256 tokens when a prompt shares them out of place.
        flags += ["--cache-reuse", "256"]
    return flags


class LlamaServer:
    """One `llama-server` process on a fixed loopback port; `stop()` then `start()` resumes it."""

    def __init__(self, binary: Path, model: Path, log: Path) -> None:
        self.binary = binary
        self.model = model
        self.log = log
        self.port = free_port()
        self.args = [
            str(binary), "-m", str(model), "--jinja", "--host", "127.0.0.1",
            "--port", str(self.port), "-c", str(CONTEXT), "-t", str(THREADS),
            *optional_flags(binary),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's root (GET /health, /props, /slots)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API: what a client's `base_url` is set to."""
        return f"{self.url}/v1"

    def start(self) -> None:
        """Start the server (again, on the same port) and wait until its model is loaded."""
        if self.process is not None and self.process.poll() is None:
            return
        # LLAMA_ARG_* variables would silently change the server's arguments.
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        with open(self.log, "a") as out:
            out.write(f"$ {' '.join(self.args)}\n")
            out.flush()
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
            )  # fmt: skip
        try:
            wait_http_ok(f"{self.url}/health", self.process, self.log, timeout_s=READY_TIMEOUT_S)
        except AssertionError as exc:
            code = self.process.poll()
            self.stop()
            state = f"exited with {code}" if code is not None else "was not ready"
            raise AssertionError(f"llama-server {state} ({self.url}/health):\n{exc}") from None
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server if it runs (SIGTERM, then SIGKILL); safe to call twice."""
        if self.process is not None and self.process.poll() is None:
            stop(self.process)

    def kill(self) -> None:
        """SIGKILL the server at once: its port closes in the middle of whatever it serves."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def current_task(self) -> int | None:
        """The id of the request a slot is decoding now (None: none is; GET /slots)."""
        try:
            with urllib.request.urlopen(f"{self.url}/slots", timeout=2) as response:
                slots = json.loads(response.read())
        except (OSError, ValueError):
            return None
        return next((int(s["id_task"]) for s in slots
                     if s.get("is_processing") and "id_task" in s), None)  # fmt: skip

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log, for assertion messages."""
        return self.log.read_text(errors="replace")[-chars:]


@pytest.fixture(scope="session", name="llama_server")
def llama_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """`llama-server` serving the embedded model on a free loopback port, for the session."""
    server = LlamaServer(
        find_binary(), find_model(), tmp_path_factory.mktemp("llama-server") / "server.log"
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()
