"""Scripted models key on what a call is for (its metadata), never on a prompt's wording."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from atom_agent import Context, run_task

from .scripts import ExecutorScript, models, passing_attempt
from .test_tool_loop_start import BOTH, BROKEN_SUB, TASK, _plan

PROMPTS = {
    "atom_agent.nodes.planner": "PLANNER_SYSTEM PLANNER_TASK PLANNER_REPLAN",
    "atom_agent.nodes.executor.node": "EXECUTOR_SYSTEM EXECUTOR_ASK EXECUTOR_DECIDE EXECUTOR_START",
    "atom_agent.nodes.executor.prompt": (
        "EXECUTOR_PINNED EXECUTOR_TIER2 EXECUTOR_TIER1 EXECUTOR_ANSWERS"
    ),
    "atom_agent.nodes.executor.tools": "ASK_USER_DESCRIPTION ASK_USER_WAIT",
    "atom_agent.nodes.executor.steering.reask": "BROKEN_CALL_NOTE",
    "atom_agent.nodes.executor.steering.require_files": "MISSING_FILES_NOTE",
    "atom_agent.nodes.executor.steering.salvage": "SALVAGED_NOTE",
    "atom_agent.nodes.executor.steering.context_window": "EARLIER_TURNS_NOTE OUT_OF_ROOM",
    "atom_agent.nodes.project.prompts": "PROJECT_SYSTEM",
    "atom_agent.nodes.project.planner": "PROJECT_LOCATE PROJECT_NOTES",
    "atom_agent.nodes.project.executor": "PROJECT_EDIT PROJECT_ANEW",
    "atom_agent.selection.candidates": "PLAIN_TASK",
    "atom_agent.selection.drafts": (
        "DRAFT_TASK DRAFT_STEP DRAFT_DEPENDENCIES DRAFT_MEMORIES DRAFT_EARLIER"
    ),
    "atom_agent.verification.contracts": (
        "CONTRACT_TASK CONTRACT_CASES CONTRACT_CLAUSES CONTRACT_SCENARIO CONTRACT_STEP"
    ),
    "atom_agent.project.reproduction": (
        "PROJECT_CONTRACT PROJECT_CONTRACT_ORIGINS PROJECT_CONTRACT_AGAIN PROJECT_CONTRACT_USAGES"
    ),
    "atom_agent.tools.results": "INVALID_ARGUMENTS",
    "atom_agent.tools.calls": "TOOL_FAILED NO_SESSION",
}
"""Every prompt text, by the module that sends it (each prompt lives beside its sender)."""


def _purposes_and_outcome(tmp_path: Path) -> tuple[str, list[tuple[str, str, str, int]]]:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    fixed = passing_attempt(
        BOTH, "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    script = ExecutorScript({("calc", 1): fixed}, plain=f"```python\n{BROKEN_SUB}```\n")
    roles = models([_plan()], script)
    outcome = run_task(TASK, ctx, models=roles)
    calls = [
        (role, c.info.purpose, c.info.step, c.info.attempt)
        for role, model in roles.items()
        for c in model.calls
    ]
    return outcome.status, calls


def test_rewording_every_prompt_changes_no_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, calls = _purposes_and_outcome(tmp_path / "before")
    assert status == "done"
    assert {p for _, p, _, _ in calls} >= {"plan", "plain", "tool_loop"}
    reworded = 0
    for module_name, names in PROMPTS.items():
        module = importlib.import_module(module_name)
        for name in names.split():
            value = getattr(module, name)
            assert isinstance(value, str), f"{module_name}.{name}"
            monkeypatch.setattr(module, name, "In other words: " + value)
            reworded += 1
    assert reworded > 20
    assert _purposes_and_outcome(tmp_path / "after") == (status, calls)


def test_run_json_and_the_report_count_the_calls_of_each_purpose(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    script = ExecutorScript(
        {("calc", 1): passing_attempt(BOTH)}, plain=f"```python\n{BROKEN_SUB}```\n"
    )
    roles = models([_plan()], script)
    outcome = run_task(TASK, ctx, models=roles)
    made: dict[str, int] = {}
    for model in roles.values():
        for call in model.calls:
            made[call.info.purpose] = made.get(call.info.purpose, 0) + 1
    run_dir = Path(outcome.run_dir)
    calls = json.loads((run_dir / "run.json").read_text())["calls"]
    assert {p: int(row["calls"]) for p, row in calls.items()} == made
    assert made["tool_loop"] == 3 and made["plain"] == 1 and made["plan"] == 1
    assert all(row["input_tokens"] > 0 and row["output_tokens"] > 0 for row in calls.values())
    report = (run_dir / "report.md").read_text()
    assert "## Model calls by purpose" in report and "| tool_loop | 3 |" in report
