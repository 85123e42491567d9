"""A batch's wall-clock budget: running tasks stop at it, tasks not started are recorded not run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.graph.metered import Clock, metered
from tests.unit.graph.scripts import ExecutorScript, models, passing_attempt, planner_model, step

from atom_agent import Context
from atom_agent.batch import BatchOptions, run_batch
from atom_agent.errors import InvalidInputError
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel


def _models(clock: Clock) -> dict[str, ScriptedChatModel]:
    """One-step tasks on the standard profile: plan, contract, three loop turns (50 s)."""
    roles = models([], ExecutorScript({}, default=passing_attempt))
    roles["planner"] = planner_model([Plan(steps=[step("one")])], cycle=True)
    return {role: metered(m, clock) for role, m in roles.items()}


def test_a_spent_batch_budget_stops_the_running_task_and_starts_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock().install(monkeypatch)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n"
                             for i in range(3)))  # fmt: skip
    out = tmp_path / "results.jsonl"
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    roles = _models(clock)
    summary = run_batch(tasks, out, BatchOptions(ctx, models=roles, max_batch_seconds=25))

    # t0 started with 25 s left: its third call ended at 30 s and its fourth was refused.
    assert sum(len(m.calls) for m in roles.values()) == 3
    assert summary["by_status"] == {"budget_exhausted": 1}
    assert summary["not_run"] == [
        {"id": f"t{i}", "reason": "not started: the batch's wall-clock budget (25s) was spent"}
        for i in (1, 2)
    ]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["status"]) for r in lines] == [
        ("t0", "budget_exhausted"), ("t1", "not_run"), ("t2", "not_run")
    ]  # fmt: skip
    assert "wall-clock budget: 30.0s of 25.0s" in lines[0]["stop_reason"]

    # Invoked again (with time enough), the batch runs what it did not start, and only that.
    again = _models(clock)
    summary = run_batch(tasks, out, BatchOptions(ctx, models=again, max_batch_seconds=1000))
    assert summary["by_status"] == {"budget_exhausted": 1, "done": 2}
    assert "not_run" not in summary
    assert len(again["planner"].calls) == 4  # t1 and t2: a plan and a contract each


def test_a_batch_budget_must_be_positive(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "task": "x"}) + "\n")
    ctx = Context(workspace=str(tmp_path / "ws"))
    with pytest.raises(InvalidInputError, match="max_batch_seconds must be positive"):
        run_batch(tasks, tmp_path / "r.jsonl", BatchOptions(ctx, max_batch_seconds=0))
