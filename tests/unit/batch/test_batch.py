"""`atom-agent batch`: validation before running, isolation of crashes, concurrency, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.unit.graph import factory

from atom_agent import Context
from atom_agent.batch import BatchOptions, ResultsFile, parse_tasks, run_batch
from atom_agent.errors import InvalidInputError

REPO = Path(__file__).resolve().parents[3]


def _write(path: Path, *lines: object) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_every_bad_line_is_reported_before_anything_runs(tmp_path: Path) -> None:
    tasks = _write(
        tmp_path / "t.jsonl",
        {"id": "a", "task": "ok"},
        "{not json",
        {"id": "a", "task": "again"},
        {"id": "b"},
        {"id": "bad id!", "task": "x"},
        {"id": "c", "task": "x", "settings": {"max_attempts": 0}},
        {"id": "d", "task": "x", "settings": {"colour": "red"}},
        ["not", "an", "object"],
        {"id": "e", "task": "x", "extra": 1},
    )
    with pytest.raises(InvalidInputError) as info:
        run_batch(tasks, tmp_path / "r.jsonl", BatchOptions(Context(workspace=str(tmp_path / "w"))))
    text = str(info.value)
    for expected in (
        "8 invalid line(s); nothing was run",
        "line 2: not valid JSON",
        "line 3: duplicate id 'a' (first on line 1)",
        "line 4: 'task' must be a non-empty string",
        "line 5: 'id' must be",
        "line 6: bad settings: max_attempts: 0 is out of range",
        "line 7: unknown setting(s) ['colour']",
        "line 8: expected a JSON object",
        "line 9: unknown key(s) ['extra']",
    ):
        assert expected in text
    assert not (tmp_path / "w").exists() and not (tmp_path / "r.jsonl").exists()


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        parse_tasks(tmp_path / "nope.jsonl")
    with pytest.raises(InvalidInputError, match="no tasks"):
        parse_tasks(_write(tmp_path / "empty.jsonl", "# only a comment"))


def test_crashes_are_recorded_concurrency_overlaps_and_rerun_skips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_TEST_LATENCY", "0.2")
    factory.CONCURRENCY.peak = 0
    tasks = _write(
        tmp_path / "tasks.jsonl",
        *({"id": f"t{i}", "task": f"task number {i}"} for i in range(4)),
        {"id": "boom", "task": "BOOM please"},
    )
    out = tmp_path / "out" / "results.jsonl"
    ctx = Context(workspace=str(tmp_path / "ws"))
    options = BatchOptions(ctx, concurrency=4, models=factory.batch_models())
    summary = run_batch(tasks, out, options)

    assert summary["by_status"] == {"done": 4, "error": 1}
    assert factory.CONCURRENCY.peak >= 2  # tasks really ran at the same time
    results = ResultsFile(out).read()
    assert "the model provider exploded" in results["boom"]["stop_reason"]
    assert results["t0"]["run_id"] == "tasks.t0"
    assert json.loads((out.parent / "summary.json").read_text())["pass_rate"] == 0.8

    # The crashed run is marked failed, not left `running` / `planning`.
    boom = json.loads((tmp_path / "ws/runs/tasks.boom/run.json").read_text())
    assert boom["status"] == "failed"
    assert "the model provider exploded" in boom["stop_reason"]

    told: list[str] = []
    again = run_batch(
        tasks, out,
        BatchOptions(
            ctx, concurrency=2, models=factory.batch_models(),
            on_retry=lambda task, result: told.append(task.id),
        ),
    )  # fmt: skip
    assert again["by_status"] == {"done": 4, "error": 1}
    assert told == ["boom"] and again["retried"] == ["boom"]  # the error is tried again, and said
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == ["boom", "boom", "t0", "t1", "t2", "t3"]  # nothing done ran twice


def test_isolated_memory_gives_each_task_its_own_project(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "iso.jsonl", {"id": "x", "task": "one"}, {"id": "y", "task": "two"})
    ctx = Context(workspace=str(tmp_path / "ws"), project_id="team")
    run_batch(
        tasks, tmp_path / "r.jsonl",
        BatchOptions(ctx, isolated_memory=True, models=factory.batch_models()),
    )  # fmt: skip
    projects = {
        json.loads((tmp_path / "ws/runs" / f"iso.{t}" / "run.json").read_text())["project_id"]
        for t in ("x", "y")
    }
    assert projects == {"team.x", "team.y"}


def test_a_torn_last_line_is_ignored_and_not_glued_to(tmp_path: Path) -> None:
    results = ResultsFile(tmp_path / "r.jsonl")
    results.append({"id": "a", "status": "done"})
    with open(results.path, "a") as handle:
        handle.write('{"id": "b", "sta')  # a writer killed mid-line
    assert set(results.read()) == {"a"}
    results.append({"id": "c", "status": "failed"})
    assert set(results.read()) == {"a", "c"}


@pytest.mark.integration
def test_sigkill_mid_batch_then_rerun_runs_every_task_exactly_once(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "kill.jsonl", *({"id": f"k{i}", "task": f"t {i}"} for i in range(6)))
    out = tmp_path / "results.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    env.update(
        PYTHONPATH=str(REPO),
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_MODELS_FACTORY="tests.unit.graph.factory:batch_models",
        ATOM_TEST_LATENCY="0.3",
    )
    cmd = [sys.executable, "-m", "atom_agent.cli", "batch", str(tasks), "--out", str(out),
           "--concurrency", "2", "--json"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        done = len(ResultsFile(out).read())
        if done >= 2:
            break
        assert proc.poll() is None, "the batch ended before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(ResultsFile(out).read()) < 6

    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert json.loads(rerun.stdout)["by_status"] == {"done": 6}
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()]
    assert sorted(ids) == [f"k{i}" for i in range(6)]  # each exactly once
