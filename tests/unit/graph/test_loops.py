"""Retry with feedback, replan, false claims of success, invalid plans, questions and resume."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.errors import WorkspaceError
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes.planner import fold_repeated_steps
from atom_agent.run import resume_run
from atom_agent.state import Plan, PlanStep, plan_problems
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.workspace import Workspace, read_json

from .scripts import (
    ADD_IMPL,
    ExecutorScript,
    failing_attempt,
    models,
    passing_attempt,
    step,
)


def test_fail_then_pass_on_retry_with_feedback_in_the_prompt(ctx: Context) -> None:
    executor = ExecutorScript({("adder", 1): failing_attempt(), ("adder", 2): passing_attempt()})
    outcome = run_task("add", ctx, models=models([Plan(steps=[step("adder")])], executor))

    assert outcome.status == "done"
    second = executor.prompts[("adder", 2)]
    assert "Earlier attempts of this step" in second
    assert "tests did not pass: 0 passed, 1 failed" in second
    assert "assert 5 == 6" in second  # the failing assertion from the test output
    ws = Workspace(ctx.workspace)
    adder = ws.step(ws.run(outcome.run_id), "adder")
    verdicts = [ws.read_verdict(a)["outcome"] for a in ws.list_attempts(adder)]
    assert verdicts == ["failed", "passed"]
    assert ws.read_step(adder)["committed_attempt"] == 2


def test_a_retry_after_a_wrong_test_starts_from_the_right_code_and_needs_no_loop(
    ctx: Context,
) -> None:
    # impl.py is right and test.py expects add(2, 3) == 6: the task's example says 5.
    task = "Write add(a, b).\n\n    >>> add(2, 3)\n    5\n"
    executor = ExecutorScript({("step1", 1): failing_attempt(), ("step1", 2): passing_attempt()})
    roles = models([Plan(steps=[step("step1")])], executor)

    def no_witness(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose == "witness":
            return AIMessage(content="No.")  # no independent implementation to testify
        return executor(messages, info)

    # Without witnesses the failing test is not contradicted, so it still decides.
    roles["executor"] = ScriptedChatModel(respond=no_witness)
    outcome = run_task(task, ctx, models=roles)

    assert outcome.status == "done"
    ws = Workspace(ctx.workspace)
    first, second = ws.list_attempts(ws.step(ws.run(outcome.run_id), "step1"))
    verdict = ws.read_verdict(first)
    assert verdict["outcome"] == "failed"  # the tests still decide
    # The retry starts from the code the first attempt kept: it meets the task's example, so
    # it is the attempt, with the step's checks as its tests; the wrong test is gone.
    assert ("step1", 2) not in executor.prompts
    assert "== 6" not in (second.staging / "test.py").read_text()


def test_claimed_success_with_failing_tests_is_a_failure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    plan = Plan(steps=[step("adder"), step("user", depends_on=["adder"])])
    # The executor says everything works: its failing tests must still fail the attempt.
    executor = ExecutorScript({("adder", 1): failing_attempt()})
    roles = models([plan], executor)
    outcome = run_task("add", ctx, models=roles)

    assert outcome.status == "failed"
    assert outcome.step_status == {"adder": "failed", "user": "blocked"}
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    verdict = ws.read_verdict(ws.attempt(ws.step(run, "adder"), 1))
    assert verdict["outcome"] == "failed"
    # No check ran for the criterion, and the claim of success does not back it.
    assert [c["status"] for c in verdict["criteria"]] == ["unverified"]
    assert not ws.step(run, "adder").artifacts.exists()
    assert json.loads(run.run_json.read_text())["status"] == "failed"
    assert "blocked" in run.report_md.read_text()


def test_exhausted_attempts_trigger_a_replan_that_keeps_committed_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=1, candidate_zero=False
    )
    first = Plan(steps=[step("base"), step("hard", depends_on=["base"])])
    second = Plan(steps=[step("easier", depends_on=["base"])])
    executor = ExecutorScript(
        {
            ("base", 1): passing_attempt(),
            ("hard", 1): failing_attempt(),
            ("easier", 1): passing_attempt(),
        }
    )
    planner_models = models([first, second], executor)
    outcome = run_task("task", ctx, models=planner_models)

    assert outcome.status == "done", outcome
    assert outcome.step_status == {"base": "committed", "easier": "committed"}
    planning = [c for c in planner_models["planner"].calls if c.info.purpose == "plan"]
    replan_prompt = str(planning[1].messages[-1].content)
    assert "- base: Step base" in replan_prompt  # committed steps are listed to keep
    assert "step 'hard' (Step hard) failed 1 attempts" in replan_prompt
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert [r["reason"] for r in read_json(run.plan_json)["revisions"]] == [
        "initial plan",
        "replan",
    ]
    assert len(ws.list_attempts(ws.step(run, "base"))) == 1  # not redone


def test_a_step_that_only_repeats_earlier_names_is_folded_into_their_step() -> None:
    encode = step("encode", criteria=["encode works"], defines=["enc", "dec"])
    decode = step(
        "decode", depends_on=["encode"], criteria=["decode works"], defines=["dec", "enc"]
    )
    later = step("later", depends_on=["decode"], defines=["stats"])
    assert plan_problems(Plan(steps=[encode, decode, later]))  # invalid as proposed
    folded = fold_repeated_steps(Plan(steps=[encode, decode, later]))
    assert [s.id for s in folded.steps] == ["encode", "later"]
    assert folded.steps[0].acceptance_criteria == ["encode works", "decode works"]
    assert folded.steps[1].depends_on == ["encode"]
    assert plan_problems(folded) == []
    valid = Plan(steps=[encode, step("more", depends_on=["encode"], defines=["enc", "x"])])
    assert fold_repeated_steps(valid) == valid  # a step that adds a name is its own step


def test_a_planner_that_never_gives_a_valid_plan_leaves_the_task_as_one_step(
    ctx: Context,
) -> None:
    no_criteria = Plan(steps=[PlanStep(id="x", title="x", description="x", acceptance_criteria=[])])
    both = ADD_IMPL + "\n\ndef sub(a, b):\n    return a - b\n"  # the stated signatures hold
    executor = ExecutorScript({("step1", 1): passing_attempt(impl=both)})
    roles = models([no_criteria], executor)  # an invalid plan is not sent back
    outcome = run_task("First write add(a, b). Then write sub(a, b).", ctx, models=roles)

    assert outcome.status == "done", outcome
    assert outcome.step_status == {"step1": "committed"}
    ws = Workspace(ctx.workspace)
    (revision,) = read_json(ws.run(outcome.run_id).plan_json)["revisions"]
    assert revision["reason"].startswith("initial plan: one step, the planner's plans were invalid")
    assert "has no acceptance criteria" in revision["reason"]


def test_a_replan_that_never_gives_a_valid_plan_keeps_the_last_plan_and_its_step(
    ctx: Context,
) -> None:
    no_criteria = Plan(steps=[PlanStep(id="x", title="x", description="x", acceptance_criteria=[])])
    executor = ExecutorScript({("hard", n): failing_attempt() for n in (1, 2, 3)})
    roles = models([Plan(steps=[step("hard")]), no_criteria], executor)
    outcome = run_task("t", replace(ctx, max_attempts=1, candidate_zero=False), models=roles)
    # The kept step gets its attempt again, fails it, and with the replan spent the run fails.
    assert outcome.status == "failed", outcome
    assert "no valid plan" not in outcome.stop_reason
    assert outcome.step_status == {"hard": "failed"}
    assert set(executor.prompts) == {("hard", 1), ("hard", 2)}
    again = executor.prompts[("hard", 2)]
    assert "Earlier attempts failed: step 'hard' (Step hard) failed 1 attempts" in again
    ws = Workspace(ctx.workspace)
    reasons = [r["reason"] for r in read_json(ws.run(outcome.run_id).plan_json)["revisions"]]
    assert reasons[0] == "initial plan"
    assert reasons[1].startswith("replan: the planner's plans were invalid (")
    assert "has no acceptance criteria" in reasons[1]
    assert reasons[1].endswith("; the last valid plan is kept")


def test_a_replan_with_invalid_plans_continues_on_the_old_plan_and_commits(
    ctx: Context,
) -> None:
    no_criteria = Plan(steps=[PlanStep(id="x", title="x", description="x", acceptance_criteria=[])])
    first = Plan(steps=[step("base"), step("hard", depends_on=["base"])])
    executor = ExecutorScript(
        {
            ("base", 1): passing_attempt(),
            ("hard", 1): failing_attempt(),
            ("hard", 2): failing_attempt(),
            ("hard", 3): failing_attempt(),  # the kept step gets its attempts afresh
            ("hard", 4): passing_attempt(),
        }
    )
    roles = models([first, no_criteria], executor)
    outcome = run_task("t", replace(ctx, candidate_zero=False), models=roles)  # 2 attempts

    assert outcome.status == "done", outcome
    assert outcome.step_status == {"base": "committed", "hard": "committed"}
    # the plan, then the invalid one, which is not sent back
    assert len([c for c in roles["planner"].calls if c.info.purpose == "plan"]) == 2
    prompt = executor.prompts[("hard", 4)]
    assert "Earlier attempts failed: step 'hard' (Step hard) failed 2 attempts" in prompt
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert len(ws.list_attempts(ws.step(run, "base"))) == 1  # the committed step stays
    assert ws.read_step(ws.step(run, "hard"))["committed_attempt"] == 4
    assert ws.read_plan(run)["steps"][1]["description"].startswith(
        "Implement hard.\n\nEarlier attempts failed: "
    )


def test_a_question_interrupts_and_the_answer_resumes_the_run(ctx: Context) -> None:
    executor = ExecutorScript(
        {
            ("adder", 1): [tool_call("ask_user", {"question": "Integers or floats?"})],
            ("adder", 2): passing_attempt(),
        }
    )
    roles = models([Plan(steps=[step("adder")])], executor)
    paused = run_task("add", ctx, models=roles, run_id="q1")

    assert paused.status == "interrupted"
    assert paused.question is not None
    assert paused.question["kind"] == "question"
    assert paused.question["question"] == "Integers or floats?"
    with pytest.raises(ValueError, match="waiting for an answer"):
        resume_run("q1", ctx, models=roles)

    done = resume_run("q1", ctx, answer="integers only", models=roles)
    assert done.status == "done"
    prompt = executor.prompts[("adder", 2)]
    assert "Q: Integers or floats?\nA: integers only" in prompt
    assert resume_run("q1", ctx, models=roles).status == "done"  # finished: nothing to do


_ASK = {"name": "ask_user", "arguments": {"question": "Integers or floats?"}}


@pytest.mark.parametrize(
    "asks",
    [
        tool_call("ask_user", {"question": "Integers or floats?"}),
        AIMessage(content=json.dumps(_ASK)),
        AIMessage(content="```json\n" + json.dumps(_ASK) + "\n```"),
        AIMessage(content="<tool_call>\n" + json.dumps(_ASK) + "\n</tool_call>"),
    ],
    ids=["tool call", "bare json", "fenced json", "tool_call tags"],
)
def test_an_unattended_run_never_ends_on_a_question(ctx: Context, asks: AIMessage) -> None:
    # The model asks although nobody answers (the tool is not offered), then waits.
    waits = AIMessage(content="I will wait for the answer.")
    executor = ExecutorScript({("adder", 1): [asks, waits], ("adder", 2): passing_attempt()})
    roles = models([Plan(steps=[step("adder")])], executor)
    outcome = run_task("add", replace(ctx, ask_user=False), models=roles)

    assert outcome.status == "done", outcome
    assert outcome.question is None
    assert all("ask_user" not in call.tool_names for call in roles["executor"].calls)
    # The call was answered: decide yourself, and say what you assumed.
    answered = [
        m
        for call in roles["executor"].calls
        for m in call.messages
        if getattr(m, "name", None) == "ask_user"
    ]
    assert answered and all("decide yourself" in str(m.content) for m in answered)
    ws = Workspace(ctx.workspace)
    first = ws.list_attempts(ws.step(ws.run(outcome.run_id), "adder"))[0]
    assert ws.read_verdict(first).get("decision") != "ask_user"


def test_resume_of_an_unknown_run_is_a_clear_error(ctx: Context) -> None:
    with pytest.raises(WorkspaceError):
        resume_run("no-such-run", ctx, models=models([], ExecutorScript({})))


def test_plan_approval_interrupt(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), approve_plan=True, candidate_zero=False)
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    roles = models([Plan(steps=[step("adder")])], executor)
    paused = run_task("add", ctx, models=roles, run_id="p1")
    assert paused.status == "interrupted"
    assert paused.question is not None and paused.question["kind"] == "plan_approval"
    assert paused.question["plan"]["steps"][0]["id"] == "adder"
    assert resume_run("p1", ctx, answer="approve", models=roles).status == "done"


def test_max_plan_steps_holds_the_planner_to_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_plan_steps=2, candidate_zero=False)
    three = Plan(steps=[step("a"), step("b"), step("c")])
    executor = ExecutorScript({}, default=passing_attempt)
    roles = models([three], executor)
    outcome = run_task("add", ctx, models=roles)
    assert outcome.status == "done" and list(outcome.step_status) == ["step1"]
    assert "Use at most 2 step(s)" in str(roles["planner"].calls[0].messages[0].content)
    ws = Workspace(ctx.workspace)
    (revision,) = read_json(ws.run(outcome.run_id).plan_json)["revisions"]
    assert "the plan has 3 steps; at most 2 are allowed" in revision["reason"]


def test_a_one_step_limit_plans_without_the_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_plan_steps=1, candidate_zero=False)
    executor = ExecutorScript({("step1", 1): passing_attempt()})
    roles = models([], executor)
    outcome = run_task("add two numbers", ctx, models=roles)
    assert outcome.status == "done" and outcome.step_status == {"step1": "committed"}
    assert roles["planner"].calls == []
    prompt = executor.prompts[("step1", 1)]
    assert "# Your step: step1 — add two numbers" in prompt
    assert "- impl.py implements exactly what the task asks" in prompt


def test_a_one_step_replan_merges_the_models_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_plan_steps=1, max_attempts=1, candidate_zero=False
    )
    code = step("code", criteria=["add(2, 3) == 5"])
    tests = step("tests", depends_on=["code"], criteria=["tests cover negatives"])
    executor = ExecutorScript({("step1", 1): failing_attempt(), ("code", 1): passing_attempt()})
    roles = models([Plan(steps=[code, tests])], executor)
    outcome = run_task("add", ctx, models=roles)
    assert outcome.status == "done" and outcome.step_status.get("code") == "committed"
    planning = [c for c in roles["planner"].calls if c.info.purpose == "plan"]
    assert len(planning) == 1  # the replan, merged rather than re-asked
    prompt = executor.prompts[("code", 1)]
    assert "- add(2, 3) == 5\n- tests cover negatives" in prompt


def test_criteria_no_check_backs_are_labelled_unverified_not_passed_off(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The step has no checks: its own tests ran and passed, so it commits, and the criteria
    # nothing executed backs say so in the verdict, its feedback and the report.
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    two = step("adder", criteria=["add(2, 3) == 5", "add(-1, 1) == 0"])
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    outcome = run_task("add", ctx, models=models([Plan(steps=[two])], executor))

    assert outcome.status == "done"
    ws = Workspace(ctx.workspace)
    verdict = ws.read_verdict(ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1))
    statuses = {c["criterion"]: c["status"] for c in verdict["criteria"]}
    assert statuses == {"add(2, 3) == 5": "unverified", "add(-1, 1) == 0": "unverified"}
    for criterion in two.acceptance_criteria:
        assert f"criterion not verified (no check ran): {criterion}" in verdict["feedback"]
    report = ws.run(outcome.run_id).report_md.read_text()
    assert "(criteria of committed steps: 2 unverified)" in report
    assert "- **unverified** — add(-1, 1) == 0" in report and "judged" not in report
