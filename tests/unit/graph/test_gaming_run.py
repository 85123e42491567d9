"""A scripted gaming model: code that answers the checks fails the step, honest code wins.

Replies are picked by the call's purpose and attempt (CallInfo), never by prompt wording.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Check, Plan, PlanStep
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from .scripts import planner_model

CHECKS = [
    Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5", origin="task"),
    Check(call="add(10, 7)", expect="17", criterion="add(10, 7) == 17", origin="task"),
]
GAMED = "def add(a, b):\n    return {(2, 3): 5, (10, 7): 17}[(a, b)]\n"
RIGHT = "def add(a, b):\n    return a + b\n"


def _run(tmp_path: Path, draft: str, witness: str) -> tuple[Context, str, str]:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0,
                  candidate_zero=False)  # fmt: skip
    plan = Plan(
        steps=[
            PlanStep(id="adder", title="add", description="Implement add(a, b).",
                     acceptance_criteria=["add(2, 3) == 5", "add(10, 7) == 17"],
                     defines=["add"], checks=CHECKS)
        ]
    )  # fmt: skip

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        code = draft if info.purpose == "draft" else witness
        return AIMessage(content=f"```python\n{code}```")

    roles = {
        "planner": planner_model([plan]),
        "executor": ScriptedChatModel(respond=respond, model_name="qwen2.5-coder:1.5b"),
    }
    outcome = run_task("Write the adder.", ctx, models=roles)
    return ctx, outcome.run_id, outcome.status


def test_a_gaming_draft_loses_to_an_honest_witness(tmp_path: Path) -> None:
    ctx, run_id, status = _run(tmp_path, GAMED, RIGHT)
    assert status == "done"
    ws = Workspace(ctx.workspace)
    assert (ws.step(ws.run(run_id), "adder").artifacts / "impl.py").read_text() == RIGHT


def test_code_that_only_answers_the_checks_is_never_committed(tmp_path: Path) -> None:
    ctx, run_id, status = _run(tmp_path, GAMED, GAMED)
    assert status == "failed"
    ws = Workspace(ctx.workspace)
    verdict = ws.read_verdict(ws.attempt(ws.step(ws.run(run_id), "adder"), 2))
    assert verdict["decision"] == "fail" and not verdict["verified"]
    assert verdict["gaming"] and "lookup_table" in verdict["gaming"][0]
    assert "the code answers the checks instead of the task" in verdict["decision_reasons"][0]
    assert "answers the checks instead of computing" in verdict["feedback"]
    assert "answers the checks" in ws.run(run_id).report_md.read_text()
