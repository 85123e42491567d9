"""Resume over damaged or half-made tree files: a clear refusal, or it carries on."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.cli.process import clean_error, cli

from atom_agent.errors import CorruptFileError, WorkspaceNotFoundError
from atom_agent.workspace import Workspace

ASKS = {"ATOM_MODELS_FACTORY": "tests.unit.graph.factory:asks_a_question"}


def _paused(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    paused = cli(ws, "run", "name it", "--run-id", "q1", **ASKS)
    assert paused.returncode == 3, paused.stderr[-2000:]
    return ws


@pytest.mark.parametrize("name", ["plan.json", "steps/one/step.json", "run.json"])
def test_resume_never_reports_done_over_a_corrupt_file(tmp_path: Path, name: str) -> None:
    ws = _paused(tmp_path)
    damaged = ws / "runs" / "q1" / name
    damaged.write_bytes(b"\xff\xfe{ torn")
    done = cli(ws, "resume", "q1", "--answer", "call it add", "--json", **ASKS)
    clean_error(done, "cannot be resumed", str(damaged), "is corrupt", "Restore")
    assert '"done"' not in done.stdout


def test_a_half_created_step_folder_is_completed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    run = ws.create_run("r", task="t")
    (run.steps_dir / "s" / "attempts").mkdir(parents=True)  # died before step.json
    assert ws.list_steps(run) == []
    step = ws.create_step(run, "s", depends_on=[], title="S")
    assert ws.read_step(step)["title"] == "S"
    again = ws.create_step(run, "s", title="S2")
    assert ws.read_step(again)["title"] == "S2"


def test_a_half_created_run_folder_is_not_a_run_until_completed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    (ws.runs_dir / "r").mkdir(parents=True)  # died before run.json
    with pytest.raises(WorkspaceNotFoundError, match="has no run.json"):
        ws.run("r")
    run = ws.create_run("r", task="t")
    assert ws.read_run(run)["task"] == "t"


def test_non_utf8_json_names_the_file(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    run = ws.create_run("r", task="t")
    run.run_json.write_bytes(b'{"task": "\xff"}')
    with pytest.raises(CorruptFileError, match="not UTF-8"):
        ws.read_run(run)
