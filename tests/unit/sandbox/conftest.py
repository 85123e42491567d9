from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from atom_agent.sandbox import (
    BubblewrapRunner,
    Limits,
    SubprocessRunner,
    probe_bubblewrap,
    probe_isolation,
)


def make_runner(kind: str) -> SubprocessRunner:
    """The runner `kind` ('bubblewrap', 'namespaces' or 'rlimits'), or a skip saying why not."""
    if kind == "rlimits":
        return SubprocessRunner(isolate=False)
    if kind == "bubblewrap":
        support = probe_bubblewrap()
        if not support.usable:
            pytest.skip(f"bubblewrap unavailable: {support.reason}")
        return BubblewrapRunner()
    if not probe_isolation(False).pid_namespace:
        pytest.skip("the namespace runner has no PID namespace on this machine")
    return SubprocessRunner()


@pytest.fixture(params=["bubblewrap", "namespaces"])
def runner(request: pytest.FixtureRequest) -> SubprocessRunner:
    """Each test runs with the bubblewrap runner and with the namespace (fallback) runner."""
    return make_runner(request.param)


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    path = tmp_path / "staging"
    path.mkdir()
    return path


@pytest.fixture
def token() -> str:
    """A unique marker put in the argv of processes a test wants to find later."""
    return f"atom-sbx-{uuid.uuid4().hex}"


@pytest.fixture
def short() -> Callable[..., Limits]:
    """Limits for tests: seconds, not minutes."""

    def make(**changes: object) -> Limits:
        values: dict[str, object] = {"timeout_s": 5.0, "cpu_s": 5, "memory_mb": 512}
        values.update(changes)
        return Limits(**values)  # type: ignore[arg-type]

    return make


@pytest.fixture
def gone() -> Callable[[str], list[int]]:
    return wait_until_gone


def live_with(token: str) -> list[int]:
    """Host pids whose command line contains `token` and that are not zombies."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            if token.encode() not in cmdline:
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        state = next((line for line in status.splitlines() if line.startswith("State:")), "")
        if "Z" not in state.split()[1:2]:
            found.append(int(entry))
    return found


def wait_until_gone(token: str, patience_s: float = 10.0) -> list[int]:
    """Poll until no process with `token` is alive; returns the survivors (empty = all gone).

    A bounded wait for the kernel to finish tearing down, not a timing assertion.
    """
    end = time.monotonic() + patience_s
    survivors = live_with(token)
    while survivors and time.monotonic() < end:
        time.sleep(0.05)
        survivors = live_with(token)
    return survivors
