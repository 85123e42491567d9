"""Running `atom-agent` as a real process, for the tests of its error messages and locks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "atom_agent.cli"]


def env_for(workspace: Path, **extra: str) -> dict[str, str]:
    """The test environment: no ATOM_* or keys of the developer, this workspace."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ATOM_") and not k.endswith("_API_KEY")
    }
    env.update(PYTHONPATH=str(REPO), ATOM_WORKSPACE=str(workspace), ATOM_SANDBOX_TIMEOUT_S="30")
    env.update(extra)
    return env


def cli(
    workspace: Path, *args: str | bytes, timeout: float = 300, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to its end; stdout and stderr as text."""
    return subprocess.run(
        [*CLI, *args], env=env_for(workspace, **extra), capture_output=True, timeout=timeout,
        text=True, errors="replace", stdin=subprocess.DEVNULL,
    )  # fmt: skip


def clean_error(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Assert exit code 2, one `atom-agent: error:` line naming `expected`, no traceback."""
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    for text in expected:
        assert text in done.stderr, (text, done.stderr[-3000:])
    return done.stderr
