"""A run is done only when its result package's tests pass; else it failed, and says which."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes.finish import package_outcome
from atom_agent.state import Check, Plan
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from .scripts import ADD_IMPL, ExecutorScript, failing_attempt, models, passing_attempt, step

# Passes beside impl.py in the staging area; in the package impl.py is `<package>.<module>`.
PLACE_BOUND_TEST = """\
import impl
from impl import add


def test_add():
    assert add(2, 3) == 5


def test_module_is_impl():
    assert impl.__name__ == "impl"
"""


def test_committed_steps_whose_package_tests_fail_make_a_failed_run(tmp_path: Path) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"), sandbox_timeout_s=30, max_attempts=1, candidate_zero=False
    )
    executor = ExecutorScript({("adder", 1): passing_attempt(ADD_IMPL, PLACE_BOUND_TEST)})
    outcome = run_task("add", ctx, models=models([Plan(steps=[step("adder")])], executor))

    assert outcome.step_status == {"adder": "committed"}
    assert outcome.status == "failed", outcome
    assert outcome.stop_reason.startswith(
        "all 1 steps committed, but the result package's tests fail: "
    )
    assert "::test_module_is_impl" in outcome.stop_reason
    assert "::test_add" not in outcome.stop_reason
    run = Workspace(ctx.workspace).run(outcome.run_id)
    info = json.loads(run.run_json.read_text())
    assert (info["status"], info["stop_reason"]) == ("failed", outcome.stop_reason)
    assert info["deliverable"]["tests"]["failing"] == [
        f"tests/test_{info['deliverable']['modules']['adder'].split('.')[-1]}.py::"
        "test_module_is_impl"
    ]
    assert f"**Status:** failed — {outcome.stop_reason}" in run.report_md.read_text()


def test_package_outcome_names_at_most_five_tests_and_a_run_that_could_not_start() -> None:
    failing = [f"tests/test_m.py::test_{i}" for i in range(7)]
    tests = {"ok": False, "failing": failing, "failed": 7, "errors": 0, "exit_code": 1}
    status, reason = package_outcome("done", "all 2 steps committed", {"tests": tests})
    assert status == "failed"
    assert reason.endswith("fail: " + ", ".join(failing[:5]) + " (+2 more)")
    error = {"tests": {"ok": False, "error": "no sandbox"}}
    assert package_outcome("done", "r", error) == (
        "failed",
        "r, but the result package's tests could not run: no sandbox",
    )
    passing = {"tests": {"ok": True, "failing": []}}
    assert package_outcome("done", "r", passing) == ("done", "r")
    assert package_outcome("budget_exhausted", "b", {"tests": tests}) == ("budget_exhausted", "b")
    assert package_outcome("done", "r", None) == ("done", "r")


def test_a_step_with_a_name_no_result_check_ran_is_never_reported_verified(
    tmp_path: Path,
) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"), sandbox_timeout_s=30, max_attempts=1, candidate_zero=False
    )
    good = Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5")
    adder = step("adder").model_copy(update={"checks": [good], "defines": ["add", "neg"]})
    impl = ADD_IMPL + "\n\ndef neg(a):\n    return a\n"
    executor = ExecutorScript({("adder", 1): passing_attempt(impl=impl)})
    outcome = run_task("add", ctx, models=models([Plan(steps=[adder])], executor))

    assert outcome.status == "done"  # the commit rule is unchanged
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    verdict = ws.read_verdict(ws.list_attempts(ws.step(run, "adder"))[-1])
    assert verdict["verified"] is False
    assert "not verified: no result checked for neg (unexercised)" in verdict["decision_reasons"]
    assert [c["status"] for c in verdict["criteria"]] == ["verified"]  # that check did hold
    assert "criteria of committed steps: 1 held;" in outcome.stop_reason
    report = run.report_md.read_text()
    assert "| 1 held |" in report and "**held** — add(2, 3) == 5" in report
    assert "- **not verified** — not verified: no result checked for neg" in report
    assert "verified" not in json.loads(run.run_json.read_text())["verification"]


def _without_witnesses(plan: Plan) -> dict[str, Any]:
    """Scripted roles: `plan`, one passing attempt of step "adder", witnesses that write no code."""
    script = ExecutorScript({("adder", 1): passing_attempt()})

    def no_witness(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose == "witness":
            return AIMessage(content="No.")  # no independent code: nothing is suspect
        return script(messages, info)

    roles = models([plan], script)
    roles["executor"] = ScriptedChatModel(respond=no_witness)
    return roles


def test_code_meeting_the_tasks_checks_is_committed_unverified_when_attempts_are_spent(
    tmp_path: Path,
) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        sandbox_timeout_s=30,
        max_attempts=1,
        max_replans=0,
        candidate_zero=False,
    )
    # The planner model's check is wrong (2 + 3 is not 6); the task's own example holds.
    wrong = Check(call="add(2, 3)", expect="6", criterion="add(2, 3) == 6")
    adder = step("adder", criteria=["add(2, 3) == 6"], defines=["add"])
    plan = Plan(steps=[adder.model_copy(update={"checks": [wrong]})])
    roles = _without_witnesses(plan)
    task = "First write add(a, b). Then write sub(a, b).\n\n>>> add(1, 1)\n2\n"
    outcome = run_task(task, ctx, models=roles)

    assert outcome.step_status == {"adder": "committed"}
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    verdict = ws.read_verdict(ws.list_attempts(ws.step(run, "adder"))[-1])
    assert (verdict["decision"], verdict["committed_on"]) == ("commit", "task checks")
    assert verdict["verified"] is False and verdict["outcome"] == "committed on task checks"
    assert any(
        "the model's contract disagrees: add(2, 3) == 6 (expected 6, got 5)" in r
        for r in verdict["decision_reasons"]
    )
    assert (ws.step(run, "adder").artifacts / "impl.py").read_text() == ADD_IMPL
    assert outcome.status == "done"  # its tests pass in the package too
    assert "committed on the task's checks only, the model's contract disagreeing: adder" in (
        outcome.stop_reason
    )
    assert " verified" not in json.loads(run.run_json.read_text())["verification"]


THREE = (
    "First write add(a, b), then sub(a, b) and mul(a, b): add(2, 3) == 5, sub(5, 3) == 2 and "
    "mul(2, 3) == 6. Include pytest tests."
)
# One plain call gets add and sub right and mul wrong: better than a package of add alone.
PLAIN_THREE = ADD_IMPL + (
    "\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
)


def test_a_package_that_executes_worse_than_the_plain_answer_is_not_handed_back(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), sandbox_timeout_s=30, max_attempts=1,
                  max_replans=0)  # fmt: skip
    # The plain answer covers neither step (no `Adder`, no `helper`): their tool loops start
    # from nothing, and what they write executes worse than the plain answer.
    plan = Plan(
        steps=[
            step("adder", defines=["add", "Adder"]),
            step("rest", ["adder"], ["sub(5, 3) == 2", "mul(2, 3) == 6"],
                 ["sub", "mul", "helper"]),
        ]
    )  # fmt: skip
    executor = ExecutorScript(
        {("adder", 1): passing_attempt(), ("rest", 1): failing_attempt()},
        plain=f"```python\n{PLAIN_THREE}```\n",
    )

    def no_witness(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose == "witness":
            return AIMessage(content="I cannot.")  # a witness for the failed step: no code
        return executor(messages, info)

    roles = models([plan], executor)
    roles["executor"] = ScriptedChatModel(respond=no_witness)
    outcome = run_task(THREE, ctx, models=roles)

    assert outcome.step_status["adder"] == "committed"
    assert outcome.step_status["rest"] != "committed"
    assert outcome.status == "failed"
    assert "result/ holds the model's plain answer instead, unverified" in outcome.stop_reason
    # Signatures of add, sub, mul and their three values: the package has add's two.
    assert "the committed steps pass 2 of the task's 6 checks, the plain answer 5" in (
        outcome.stop_reason
    )
    run = Workspace(ctx.workspace).run(outcome.run_id)
    result = run.path / "result"
    assert (result / "plain_answer.py").read_text().strip() == PLAIN_THREE.strip()
    assert "pass fewer of the task's own checks" in (result / "README.md").read_text()
    # The committed step stays where it was.
    assert (run.path / "steps" / "adder" / "committed" / "artifacts" / "impl.py").is_file()


def test_a_package_that_executes_better_than_the_plain_answer_is_handed_back(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), sandbox_timeout_s=30, max_attempts=1,
                  max_replans=0)  # fmt: skip
    plan = Plan(steps=[step("all", defines=["add", "sub", "mul"])])
    right = PLAIN_THREE.replace(
        "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"
    )
    executor = ExecutorScript(
        {("all", 1): passing_attempt(right)}, plain=f"```python\n{PLAIN_THREE}```\n"
    )
    outcome = run_task(THREE, ctx, models=models([plan], executor))

    assert outcome.status == "done", outcome
    info = json.loads(Workspace(ctx.workspace).run(outcome.run_id).run_json.read_text())
    assert not info["deliverable"].get("unverified")
    assert "plain answer instead" not in outcome.stop_reason
