"""`atom-agent run / resume / runs` as real subprocesses, including a SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atom_agent.workspace import Workspace
from atom_agent.workspace._commit import current_attempt

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "atom_agent.cli"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    env.update(
        PYTHONPATH=str(REPO),
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_SANDBOX_TIMEOUT_S="30",
        **extra,
    )
    return env


def test_run_json_and_runs_listing(tmp_path: Path) -> None:
    env = _env(tmp_path, ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_slow_steps")
    done = subprocess.run(
        [*CLI, "run", "two things", "--json", "--run-id", "j1"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "done"
    assert outcome["step_status"] == {"one": "committed", "two": "committed"}
    assert Path(outcome["report"]).read_text().startswith("# Run j1")

    listing = subprocess.run(
        [*CLI, "runs", "list", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert [r["run_id"] for r in json.loads(listing.stdout)] == ["j1"]
    shown = subprocess.run(
        [*CLI, "runs", "show", "j1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "```mermaid" in shown.stdout


def test_question_exit_code_and_resume_with_answer(tmp_path: Path) -> None:
    env = _env(tmp_path, ATOM_MODELS_FACTORY="tests.unit.graph.factory:asks_a_question")
    paused = subprocess.run(
        [*CLI, "run", "name it", "--run-id", "q1"],
        env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert paused.returncode == 3, paused.stderr
    assert "Which name?" in paused.stdout
    assert "atom-agent resume q1" in paused.stdout
    resumed = subprocess.run(
        [*CLI, "resume", "q1", "--answer", "call it add", "--json"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "done"


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    env = _env(tmp_path)
    unknown = subprocess.run(
        [*CLI, "resume", "nope"], env=env, capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode == 2
    assert "atom-agent: error:" in unknown.stderr and "nope" in unknown.stderr
    bad = subprocess.run(
        [*CLI, "run", "x", "--max-attempts", "0"], env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "max_attempts: 0 is out of range" in bad.stderr
    factory = subprocess.run(
        [*CLI, "run", "x", "--models-factory", "no_such_module:f"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert factory.returncode == 2
    assert "cannot be loaded" in factory.stderr


@pytest.mark.integration
def test_sigkill_mid_run_then_resume_does_not_redo_committed_steps(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_slow_steps",
        ATOM_TEST_LATENCY="0.4",
    )
    proc = subprocess.Popen(
        [*CLI, "run", "two things", "--run-id", "k1", "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    ws = Workspace(tmp_path / "ws")
    committed = tmp_path / "ws/runs/k1/steps/one/committed/artifacts/impl.py"
    second = tmp_path / "ws/runs/k1/steps/two/attempts/1"
    deadline = time.monotonic() + 240
    while not (committed.exists() and second.exists()) and time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    assert committed.exists() and second.exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    resumed = subprocess.run(
        [*CLI, "resume", "k1", "--json"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert outcome["status"] == "done"
    run = ws.run("k1")
    assert len(ws.list_attempts(ws.step(run, "one"))) == 1  # committed step not redone
    # The killed attempt of step two had no verdict: it was restarted, not duplicated.
    assert current_attempt(ws.step(run, "two").committed_dir) == 1
