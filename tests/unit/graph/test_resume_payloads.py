"""Resume payloads are checked before they reach the state: a wrong one is asked again."""

from __future__ import annotations

from pathlib import Path

from atom_agent import Context, resume_run, run_task
from atom_agent.state import Plan
from atom_agent.testing import tool_call

from .scripts import ExecutorScript, models, passing_attempt, step


def test_a_wrong_plan_approval_is_asked_again_and_never_sticks(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), approve_plan=True)
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    roles = models([Plan(steps=[step("adder")])], executor)
    paused = run_task("add", ctx, models=roles, run_id="p1")
    assert paused.question is not None and "error" not in paused.question

    cycle = {"steps": [
        {**step("a", depends_on=["b"]).model_dump()}, {**step("b", depends_on=["a"]).model_dump()},
    ]}  # fmt: skip
    wrong = [
        (42, "int 42 is not an answer to a plan approval"),
        (False, "bool False is not an answer to a plan approval"),
        ({"approved": "yes"}, "dict {'approved': 'yes'} is not an answer"),
        ({"plan": {"steps": "none"}}, "the edited plan is invalid: steps: Input should be"),
        ({"plan": cycle}, "the edited plan is invalid: the dependencies form a cycle"),
    ]
    for answer, error in wrong:
        again = resume_run("p1", ctx, answer=answer, models=roles)
        assert again.status == "interrupted", (answer, again)
        assert again.question is not None and again.question["kind"] == "plan_approval"
        assert error in again.question["error"], again.question["error"]
        assert again.question["plan"]["steps"][0]["id"] == "adder"  # the plan is unchanged
    # Nothing wrong reached the state: no replan was asked of the planner.
    assert sum(1 for c in roles["planner"].calls if c.info.purpose == "plan") == 1
    done = resume_run("p1", ctx, answer={"approve": True}, models=roles)
    assert done.status == "done" and done.step_status == {"adder": "committed"}


def test_an_edited_plan_runs_when_valid(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), approve_plan=True)
    executor = ExecutorScript({("renamed", 1): passing_attempt()})
    roles = models([Plan(steps=[step("adder")])], executor)
    run_task("add", ctx, models=roles, run_id="p2")
    edited = {"steps": [step("renamed", defines=["add"]).model_dump()]}
    done = resume_run("p2", ctx, answer={"plan": edited}, models=roles)
    assert done.status == "done" and done.step_status == {"renamed": "committed"}


def test_a_wrong_answer_to_a_question_is_asked_again(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2)
    executor = ExecutorScript(
        {
            ("adder", 1): [tool_call("ask_user", {"question": "Integers or floats?"})],
            ("adder", 2): passing_attempt(),
        }
    )
    roles = models([Plan(steps=[step("adder")])], executor)
    assert run_task("add", ctx, models=roles, run_id="q1").status == "interrupted"
    for answer in (42, False, {"reply": "ints"}, {"answer": 7}):
        again = resume_run("q1", ctx, answer=answer, models=roles)
        assert again.status == "interrupted"
        assert again.question is not None and again.question["question"] == "Integers or floats?"
        assert "is not an answer" in again.question["error"]
    done = resume_run("q1", ctx, answer={"answer": "integers only"}, models=roles)
    assert done.status == "done"
    assert "Q: Integers or floats?\nA: integers only" in executor.prompts[("adder", 2)]
