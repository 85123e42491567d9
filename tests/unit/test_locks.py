"""A run and a batch file are held by one process at a time; a second says who holds them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.unit.cli.process import CLI, clean_error, cli, env_for

from atom_agent.batch import ResultsFile
from atom_agent.errors import LockedError
from atom_agent.locks import exclusive


def test_a_second_holder_in_this_process_is_refused_with_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with exclusive(lock, "the thing"):
        with pytest.raises(LockedError) as info, exclusive(lock, "the thing"):
            pass
    text = str(info.value)
    assert f"process {os.getpid()} on {socket.gethostname()}" in text and str(lock) in text
    with exclusive(lock, "the thing"):  # released: free again
        pass


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "the first process ended too early"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


@pytest.mark.integration
def test_a_second_process_on_a_running_run_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    # The first run holds its lock while its steps wait on a gate, for as long as two more CLI
    # processes take to start (a fixed latency made every call wait 5 s, the run ≈ a minute).
    gate = tmp_path / "gate"
    env = env_for(
        ws, ATOM_MODELS_FACTORY="tests.unit.graph.factory:two_slow_steps", ATOM_TEST_GATE=str(gate)
    )
    first = subprocess.Popen(
        [*CLI, "run", "two things", "--run-id", "held", "--json"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(ws / "runs" / "held" / "steps" / "one", first)
        extra = {"ATOM_MODELS_FACTORY": "tests.unit.graph.factory:two_slow_steps"}
        resumed = cli(ws, "resume", "held", **extra)
        clean_error(resumed, "run 'held' is in use by process", str(first.pid), "held.lock")
        again = cli(ws, "run", "two things", "--run-id", "held", **extra)
        clean_error(again, "run 'held' is in use by process", str(first.pid))
    finally:
        gate.touch()
        assert first.wait(timeout=300) == 0
    # The first run was not disturbed: every step committed once.
    run = json.loads((ws / "runs" / "held" / "run.json").read_text())
    assert run["status"] == "done"


@pytest.mark.integration
def test_two_batches_on_one_file_never_run_a_task_twice(tmp_path: Path) -> None:
    tasks = tmp_path / "six.jsonl"
    tasks.write_text(
        "".join(json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n" for i in range(6))
    )
    out = tmp_path / "results.jsonl"
    ws = tmp_path / "ws"
    env = env_for(
        ws, ATOM_MODELS_FACTORY="tests.unit.graph.factory:batch_models", ATOM_TEST_LATENCY="0.3"
    )
    cmd = [*CLI, "batch", str(tasks), "--out", str(out), "--json"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(ws / "runs", first)
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        clean_error(second, "is in use by process", str(first.pid), "results.jsonl.lock")
    finally:
        assert first.wait(timeout=600) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    assert sorted(r["id"] for r in lines) == [f"t{i}" for i in range(6)]  # 6 lines, not 12
    assert set(ResultsFile(out).read()) == {f"t{i}" for i in range(6)}
