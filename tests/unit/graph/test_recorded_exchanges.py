"""Whole runs replayed from real model exchanges: the tool loop on what a real model said.

Each file in ``tests/data/recordings`` holds the replies the embedded model gave, in order,
in a standard-profile run of one task (in-process, or through llama-server), recorded by
``scripts/record_exchanges.py``. Replayed here with the real sandbox and workspace, the run
must end as it did: a change to prompts, tools or middleware that breaks what the real
model's calls do fails here. When a change alters which calls a run makes, the replay says
which call is out of step: record again (README, "Recorded exchanges").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.testing import replaying
from atom_agent.workspace import Workspace

RECORDINGS = sorted((Path(__file__).parents[2] / "data" / "recordings").glob("*.json"))


def test_there_are_recordings_of_both_ways_of_serving() -> None:
    served = {json.loads(p.read_text())["served"] for p in RECORDINGS}
    assert served == {False, True}, RECORDINGS


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_a_recorded_run_replays_to_the_same_end(path: Path, tmp_path: Path) -> None:
    data = json.loads(path.read_text())
    ctx = Context(workspace=str(tmp_path / "ws"), **data["settings"])
    model = replaying(path)
    outcome = run_task(data["task"], ctx, models=model)

    recorded = data["outcome"]
    assert outcome.status == recorded["status"]
    assert outcome.step_status == recorded["step_status"]
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    for step, code in recorded["committed"].items():
        assert (ws.step(run, step).artifacts / "impl.py").read_text() == code
    assert len(model.calls) == len(data["calls"])  # every recorded reply, no more
    # What the loop really did is in history.json, as it is in a live run.
    loop_turns = [c for c in data["calls"] if "write_file" in c["tools"]]
    if loop_turns:
        histories = list(run.path.glob("steps/*/attempts/*/messages/history.json"))
        assert histories and any("tool_calls" in h.read_text() for h in histories)
