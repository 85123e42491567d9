"""A failing test the run wrote is evidence: never silently overruled, never behind "verified".

The scripted ``add`` case of issue 57: the plan's contract checks only the signature of
``add(a, b)``; the first draft writes ``return a - b`` with its own test ``assert add(2, 3) ==
5``. Replies are picked by the call's purpose and attempt (CallInfo), never by prompt wording.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Check, Plan, PlanStep
from atom_agent.testing import ScriptedChatModel
from atom_agent.verification.signatures import signature_checks
from atom_agent.workspace import Workspace

from .scripts import planner_model

RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
OWN_TEST = "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
SMALL_NAME = "qwen2.5-coder:1.5b"
TASK = "Write the adder."


def _signature() -> Check:
    (check,) = signature_checks("add(a, b)", "add(a, b)", 0, ["add"], [])
    return check


def _plan(checks: list[Check]) -> Plan:
    return Plan(
        steps=[
            PlanStep(
                id="adder",
                title="add two numbers",
                description="Implement add(a, b).",
                acceptance_criteria=["add(a, b) has the stated signature"],
                defines=["add"],
                checks=checks,
            )
        ]
    )


def _drafts(
    by_attempt: dict[int, str], witness: str
) -> Callable[[list[BaseMessage], CallInfo], AIMessage]:
    """A draft call of attempt n gets ``by_attempt[n]``; a witness gets `witness`."""

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        assert info.purpose in ("draft", "witness"), info
        assert info.attempt is not None
        code = by_attempt[info.attempt] if info.purpose == "draft" else witness
        return AIMessage(content=f"```python\n{code}```")

    return respond


def _run(ctx: Context, checks: list[Check], by_attempt: dict[int, str], witness: str) -> Any:
    roles = {
        "planner": planner_model([_plan(checks)]),
        "executor": ScriptedChatModel(respond=_drafts(by_attempt, witness), model_name=SMALL_NAME),
    }
    return run_task(TASK, ctx, models=roles), roles["executor"]


def _verdict(ctx: Context, run_id: str, n: int) -> dict[str, Any]:
    ws = Workspace(ctx.workspace)
    return ws.read_verdict(ws.attempt(ws.step(ws.run(run_id), "adder"), n))


def _draft_prompt(executor: ScriptedChatModel, attempt: int) -> str:
    (call,) = [c for c in executor.calls if c.info.purpose == "draft" and c.info.attempt == attempt]
    return str(call.messages[-1].content)


def test_a_failing_own_test_retries_with_the_test_shown_and_the_right_draft_is_committed(
    ctx: Context,
) -> None:
    outcome, executor = _run(ctx, [_signature()], {1: WRONG + OWN_TEST, 2: RIGHT}, WRONG)

    assert outcome.status == "done", outcome
    first = _verdict(ctx, outcome.run_id, 1)
    assert first["decision"] == "retry" and not first["verified"]
    assert first["own_tests"] == ["add(2, 3) == 5"]
    # Attempt 2 is asked with attempt 1's failing test, and what the code gave, in its prompt.
    assert "your own test failed: add(2, 3) == 5: expected 5, got -1" in _draft_prompt(executor, 2)
    second = _verdict(ctx, outcome.run_id, 2)
    assert second["outcome"] == "passed" and second["overruled"] == []
    ws = Workspace(ctx.workspace)
    committed = ws.step(ws.run(outcome.run_id), "adder").artifacts / "impl.py"
    assert committed.read_text() == RIGHT


def test_when_nothing_passes_the_drafts_own_test_the_run_never_ends_done_and_verified(
    tmp_path: Any,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0,
                  candidate_zero=False)  # fmt: skip
    outcome, executor = _run(ctx, [_signature()], {1: WRONG + OWN_TEST, 2: WRONG}, WRONG)

    assert outcome.status == "failed", outcome
    assert "your own test failed: add(2, 3) == 5" in _draft_prompt(executor, 2)
    last = _verdict(ctx, outcome.run_id, 2)
    assert last["decision"] == "fail" and not last["verified"]
    # The witnesses wrote the draft's very bug: a model agreeing with itself outranks nothing.
    assert last["cross_examination"]["suspect_checks"] == []


def test_a_commit_over_a_failing_own_test_is_labelled_in_verdict_report_and_run_json(
    tmp_path: Any,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0,
                  candidate_zero=False)  # fmt: skip
    task_check = Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5", origin="task")
    wrong_test = "\n\ndef test_add():\n    assert add(1, 1) == 3\n"
    outcome, _ = _run(ctx, [task_check], {1: RIGHT + wrong_test, 2: RIGHT}, RIGHT)

    last = _verdict(ctx, outcome.run_id, 2)
    assert last["committed_on"] == "task checks" and not last["verified"]
    (over,) = last["overruled"]
    assert "add(1, 1) == 3" in over and "outranked by every check the task states" in over
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert "failed, outranked" in run.report_md.read_text()
    record = json.loads((run.path / "run.json").read_text())
    assert "failing checks outranked: adder: " in json.dumps(record)


def test_an_own_test_the_tasks_example_contradicts_is_outranked_and_both_are_named(
    ctx: Context,
) -> None:
    task_check = Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5", origin="task")
    wrong_test = "\n\ndef test_add():\n    assert add(2, 3) == 6\n"
    outcome, executor = _run(ctx, [task_check], {1: RIGHT + wrong_test}, RIGHT)

    assert outcome.status == "done", outcome
    assert [c.info.purpose for c in executor.calls] == ["draft"]  # nothing drawn against it
    verdict = _verdict(ctx, outcome.run_id, 1)
    assert verdict["outcome"] == "passed"
    (over,) = verdict["overruled"]
    assert "`add(2, 3) == 6` failed" in over and "the task's own check `add(2, 3) == 5`" in over
