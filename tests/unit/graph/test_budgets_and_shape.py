"""Budgets stop a run gracefully; the graph's shape is deliberate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from atom_agent import Context, Resources, build_graph, run_task
from atom_agent.errors import ConfigError, MissingCredentialsError, ModelError
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from .scripts import (
    ExecutorScript,
    failing_attempt,
    models,
    passing_attempt,
    read,
    step,
    write,
)


def _two_steps() -> tuple[Plan, ExecutorScript]:
    plan = Plan(steps=[step("one"), step("two")])
    executor = ExecutorScript({("one", 1): passing_attempt(), ("two", 1): passing_attempt()})
    return plan, executor


def _assert_budget_stop(ctx: Context, outcome: object, budget: str) -> None:
    assert outcome.status == "budget_exhausted", outcome  # type: ignore[attr-defined]
    assert budget in outcome.stop_reason  # type: ignore[attr-defined]
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)  # type: ignore[attr-defined]
    assert json.loads(run.run_json.read_text())["status"] == "budget_exhausted"
    assert budget in run.report_md.read_text()


def test_token_budget(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_tokens=1, candidate_zero=False)
    plan, executor = _two_steps()
    roles = models([plan], executor)
    outcome = run_task("t", ctx, models=roles)
    _assert_budget_stop(ctx, outcome, "token budget")
    # The plan's call spent the budget: its steps' contract calls were never made.
    assert len(roles["planner"].calls) == 1 and not roles["executor"].calls
    assert outcome.step_status == {}


def test_cost_budget_keeps_what_was_committed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Priced like gemini-2.5-pro: the plan and step one cost about $0.0046, step two's first
    # call about $0.0008 more; its second call is refused.
    ctx = Context(workspace=str(tmp_path / "ws"), max_cost_usd=0.005, candidate_zero=False)
    plan, executor = _two_steps()
    roles = models([plan], executor, model_name="gemini-2.5-pro")
    outcome = run_task("t", ctx, models=roles)
    _assert_budget_stop(ctx, outcome, "cost budget")
    assert len(roles["executor"].calls) == 4 and len(roles["planner"].calls) == 3
    assert outcome.step_status["one"] == "committed"
    assert outcome.step_status["two"] == "pending"
    ws = Workspace(ctx.workspace)
    assert (ws.step(ws.run(outcome.run_id), "one").artifacts / "impl.py").exists()


def test_wall_clock_budget(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_wall_seconds=0.001, candidate_zero=False)
    plan, executor = _two_steps()
    outcome = run_task("t", ctx, models=models([plan], executor))
    _assert_budget_stop(ctx, outcome, "wall-clock budget")


def test_tool_call_budget_ends_an_attempt(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        max_tool_calls=2,
        max_attempts=1,
        max_replans=0,
        candidate_zero=False,
    )
    looping = [read("impl.py")] * 10 + [write("impl.py", "x = 1\n")]
    executor = ExecutorScript({("one", 1): looping})
    outcome = run_task("t", ctx, models=models([Plan(steps=[step("one")])], executor))
    assert outcome.status == "failed"
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "one"), 1)
    history = ws.read_history(attempt)
    assert sum(1 for m in history if m.get("type") == "tool") == 2
    assert "missing files: impl.py, test.py" in ws.read_verdict(attempt)["feedback"]


def test_attempts_per_step_budget_is_exact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Every attempt fails; with 3 attempts and no replan the step fails after exactly 3.
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=3, max_replans=0, candidate_zero=False
    )
    executor = ExecutorScript({}, default=failing_attempt)
    plan = Plan(steps=[step("one"), step("two", depends_on=["one"])])
    outcome = run_task("t", ctx, models=models([plan], executor))

    assert outcome.status == "failed"
    assert outcome.step_status == {"one": "failed", "two": "blocked"}
    assert sorted(executor.prompts) == [("one", 1), ("one", 2), ("one", 3)]
    ws = Workspace(ctx.workspace)
    attempts = ws.list_attempts(ws.step(ws.run(outcome.run_id), "one"))
    assert [a.n for a in attempts] == [1, 2, 3]
    decisions = [ws.read_verdict(a)["decision"] for a in attempts]
    assert decisions == ["retry", "retry", "fail"]


def test_graph_shape() -> None:
    drawn = build_graph(Resources(Context())).get_graph()
    edges = {(e.source, e.target, e.conditional) for e in drawn.edges}
    assert edges == {
        ("__start__", "start", False),
        ("start", "planner", False),
        ("planner", "approve_plan", True),
        ("planner", "select_step", True),
        ("planner", "finish", True),
        ("approve_plan", "planner", True),
        ("approve_plan", "select_step", True),
        ("select_step", "executor", True),
        ("select_step", "finish", True),
        ("executor", "ask_user", True),
        ("executor", "reflector", True),
        ("executor", "finish", True),
        ("ask_user", "executor", False),
        ("reflector", "executor", True),
        ("reflector", "planner", True),
        ("reflector", "select_step", True),
        ("reflector", "finish", True),
        ("finish", "__end__", False),
    }


def test_executor_tools_limit_what_the_model_sees_and_can_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from atom_agent.testing import tool_call

    ctx = Context(
        workspace=str(tmp_path / "ws"),
        executor_tools="write_file,run_tests,recall",
        candidate_zero=False,
    )
    script = [tool_call("search_files", {"pattern": "x"}), *passing_attempt()]
    roles = models([Plan(steps=[step("one")])], ExecutorScript({("one", 1): script}))
    outcome = run_task("t", ctx, models=roles)
    assert outcome.status == "done"
    assert roles["executor"].calls[0].tool_names == ["write_file", "run_tests", "recall"]
    ws = Workspace(ctx.workspace)
    history = ws.read_history(ws.attempt(ws.step(ws.run(outcome.run_id), "one"), 1))
    refused = next(m for m in history if m.get("type") == "tool")
    assert "search_files" in str(refused["content"]) and refused.get("status") == "error"


def test_unknown_executor_tools_are_a_configuration_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from atom_agent.errors import ConfigError

    ctx = Context(
        workspace=str(tmp_path / "ws"), executor_tools="write_file,teleport", candidate_zero=False
    )
    roles = models([Plan(steps=[step("one")])], ExecutorScript({}))
    with pytest.raises(ConfigError, match="unknown tool.*teleport"):
        run_task("t", ctx, models=roles)


class _KeyRevokedError(ModelError, ConfigError):
    """A provider's configuration error other than a missing key (e.g. a revoked one)."""


@pytest.mark.parametrize(
    "error",
    [
        MissingCredentialsError("google_genai", ("GOOGLE_API_KEY",)),
        _KeyRevokedError("the executor's API key was revoked: set a new one in EXAMPLE_API_KEY"),
    ],
    ids=["missing key", "any configuration error"],
)
def test_a_configuration_error_of_the_executor_fails_the_run_and_is_never_feedback(
    tmp_path: Path, error: Exception
) -> None:
    """Only model and tool failures become feedback; a ConfigError fails the run with its fix."""

    def executor(messages: list[Any]) -> Any:
        raise error

    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    roles = models([Plan(steps=[step("one")])], ExecutorScript({("one", 1): passing_attempt()}))
    roles["executor"] = ScriptedChatModel(respond=executor)
    with pytest.raises(ConfigError, match=re.escape(str(error)[:40])):
        run_task("t", ctx, models=roles)
    assert len(roles["executor"].calls) == 1  # not retried as if the model had answered badly
    ws = Workspace(ctx.workspace)
    (run,) = ws.list_runs()
    attempt = ws.attempt(ws.step(run, "one"), 1)
    assert not attempt.verdict_json.exists()  # no verdict, no advice to a next attempt
