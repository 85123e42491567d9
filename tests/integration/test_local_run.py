"""One real run on the embedded local model: whatever the verdict, a well-formed run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.workspace import Workspace, read_json

pytestmark = [pytest.mark.local_model, pytest.mark.integration]

TASK = "Write a Python function add(a, b) that returns the sum of two numbers, with pytest tests."


# The wall-clock budget is checked before every model call, and the embedded model stops
# decoding when it is spent, so the run ends within one call's prefill of 300 s; without the
# budget, on a loaded 2-core machine a run takes 5-15 minutes.
@pytest.mark.timeout(1800)
def test_a_small_task_on_the_local_model(tmp_path: Path) -> None:
    ctx = Context(
        model="local",
        workspace=str(tmp_path / "ws"),
        max_attempts=2,
        max_tool_calls=6,
        max_replans=0,
        max_wall_seconds=300,
    )
    outcome = run_task(TASK, ctx)
    assert outcome.status in ("done", "failed", "budget_exhausted"), outcome

    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    info = json.loads(run.run_json.read_text())
    assert info["status"] == outcome.status
    assert info["usage"]["total_tokens"] > 0
    report = run.report_md.read_text()
    assert report.startswith(f"# Run {outcome.run_id}")
    stopped = outcome.status == "budget_exhausted"
    if stopped:
        assert (
            info["budget"]["max_seconds"] == 300
            and "wall-clock budget" in info["budget"]["exhausted"]
        )
        assert info["budget"]["seconds"] < 300 + 120  # at most one call's prefill over
    if stopped and not run.plan_json.exists():
        return  # the budget stopped the planner: no plan was made
    assert ws.read_plan(run)["steps"]
    assert len(read_json(run.plan_json)["revisions"]) >= 1
    assert "```mermaid" in report
    for step in ws.list_steps(run):
        attempts = ws.list_attempts(step)
        for attempt in attempts:
            if stopped and attempt is attempts[-1] and not attempt.verdict_json.exists():
                continue  # the attempt the budget stopped midway: no record of its calls
            assert attempt.history_json.exists()
            assert ws.read_history(attempt)  # parses, non-empty
            if attempt.verdict_json.exists():
                assert ws.read_verdict(attempt)["outcome"] in ("passed", "failed", "asked the user")
        if outcome.step_status.get(step.step_id) == "committed":
            assert (step.artifacts / "impl.py").exists() and (step.artifacts / "test.py").exists()
