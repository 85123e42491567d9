"""Budgets are limits: every model call is checked, and the run stops before the one it can't pay.

Scripted models whose every reply costs 100 tokens and 10 seconds on a fake clock, so the
call a budget refuses is known exactly. For the token and the wall-clock budget, at each kind
of call (the planner's, the plain answer's, a draft, a turn of the standard profile's tool
loop, a witness the reflector draws): the run ends ``budget_exhausted`` without making that
call, with the figures in run.json and report.md, and what it committed before stays committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from atom_agent import Context, resume_run, run_task
from atom_agent.errors import BudgetExhaustedError
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes import common
from atom_agent.nodes.common import MIN_STEP_SECONDS, time_limit
from atom_agent.run import RunOutcome
from atom_agent.selection import candidates
from atom_agent.state import Check, Plan, PlanStep
from atom_agent.testing import ScriptedChatModel, reply_of
from atom_agent.workspace import Workspace

from .metered import SECONDS, TOKENS, Clock, metered
from .scripts import ExecutorScript, models, passing_attempt, planner_model, step


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock().install(monkeypatch)


def budget_of_calls(kind: str, calls: int) -> dict[str, Any]:
    """A budget of exactly `calls` scripted calls: the next one is refused."""
    if kind == "tokens":
        return {"max_tokens": calls * TOKENS}
    return {"max_wall_seconds": calls * SECONDS}


def assert_stopped(ctx: Context, outcome: RunOutcome, kind: str, calls: int) -> dict[str, Any]:
    """The run ended budget_exhausted after `calls` calls, its figures in run.json, report.md."""
    assert outcome.status == "budget_exhausted", outcome
    name = "token budget" if kind == "tokens" else "wall-clock budget"
    assert name in outcome.stop_reason
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    info = json.loads(run.run_json.read_text())
    assert info["status"] == "budget_exhausted"
    figures = info["budget"]
    if kind == "tokens":
        assert figures["tokens"] == calls * TOKENS == figures["max_tokens"]
        assert f"{calls * TOKENS} of {calls * TOKENS} tokens" in run.report_md.read_text()
    else:
        assert figures["seconds"] == calls * SECONDS == figures["max_seconds"]
        seconds = f"{calls * SECONDS:.1f} s of {calls * SECONDS:.1f} s"
        assert seconds in run.report_md.read_text()
    assert name in figures["exhausted"]
    assert outcome.usage["total_tokens"] == calls * TOKENS  # the refused call cost nothing
    return info


def counts(roles: dict[str, ScriptedChatModel]) -> dict[str, int]:
    return {role: len(model.calls) for role, model in roles.items()}


KINDS = ["tokens", "wall-clock"]


# --- the planner and the plain answer --------------------------------------------------------

PLAIN = "def add(a, b):\n    return a + b\n"


def _plain_first(clock: Clock, plans: list[Plan]) -> dict[str, ScriptedChatModel]:
    executor = ExecutorScript({}, plain=f"```python\n{PLAIN}```")
    return {role: metered(m, clock) for role, m in models(plans, executor).items()}


@pytest.mark.parametrize("kind", KINDS)
def test_the_planners_call_is_refused_and_the_plain_answer_is_kept(
    tmp_path: Path, clock: Clock, kind: str
) -> None:
    # Candidate zero (one plain call, the executor's model) comes first; the plan's call would
    # be the second.
    roles = _plain_first(clock, [Plan(steps=[step("one"), step("two")])])
    ctx = Context(workspace=str(tmp_path / "ws"), **budget_of_calls(kind, 1))
    outcome = run_task("t", ctx, models=roles)

    assert counts(roles) == {"planner": 0, "executor": 1}
    info = assert_stopped(ctx, outcome, kind, 1)
    assert "planner stopped before its next model call" in outcome.stop_reason
    assert outcome.step_status == {}
    # The user still gets what the one plain call gave, labelled unverified.
    assert info["deliverable"]["unverified"] is True
    assert outcome.result is not None
    assert (Path(outcome.result) / "plain_answer.py").read_text().strip() == PLAIN.strip()


SAMPLED = (
    "Write add(a, b) that returns the sum and sub(a, b) that returns the difference, "
    "e.g. add(2, 3) == 5 and sub(5, 3) == 2."
)
ORDERED = "First: " + SAMPLED
"""The same task, ordered: its plan takes a call (a task of unordered names would get none)."""
WRONG_BOTH = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n"


@pytest.mark.parametrize("kind", KINDS)
def test_a_plain_answer_sample_is_refused(tmp_path: Path, clock: Clock, kind: str) -> None:
    # The small profile samples more plain answers when the first fails a check the task
    # states; the budget pays for the first answer only.
    executor = ExecutorScript({}, plain=f"```python\n{WRONG_BOTH}```")
    roles = {role: metered(m, clock) for role, m in models([], executor).items()}
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", **budget_of_calls(kind, 1))
    outcome = run_task(SAMPLED, ctx, models=roles)

    assert counts(roles) == {"planner": 0, "executor": 1}
    info = assert_stopped(ctx, outcome, kind, 1)
    assert info["deliverable"]["unverified"] is True
    assert outcome.result is not None
    assert (Path(outcome.result) / "plain_answer.py").read_text().strip() == WRONG_BOTH.strip()


# --- a draft (small profile) -----------------------------------------------------------------

BOTH = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
WRONG_SUB = BOTH.replace("a - b", "b - a")


def _drafting(clock: Clock) -> dict[str, ScriptedChatModel]:
    plan = Plan(
        steps=[
            PlanStep(id="adder", title="add", description="Implement add.",
                     acceptance_criteria=["add(2, 3) == 5"], defines=["add"],
                     checks=[Check(call="add(2, 3)", expect="5")]),
            PlanStep(id="subber", title="sub", description="Implement sub.",
                     acceptance_criteria=["sub(5, 3) == 2"], defines=["sub"],
                     checks=[Check(call="sub(5, 3)", expect="2")]),
        ]
    )  # fmt: skip

    drafted: list[str] = []

    def draft(messages: list[BaseMessage]) -> AIMessage:
        # Step one's draft passes; step two's gets sub wrong, so witnesses would follow.
        assert isinstance(messages[0], HumanMessage)
        drafted.append(BOTH if not drafted else WRONG_SUB)
        return AIMessage(content=f"```python\n{drafted[-1]}```")

    roles = {
        "planner": planner_model([plan]),
        "executor": ScriptedChatModel(respond=draft),
    }
    return {role: metered(m, clock) for role, m in roles.items()}


@pytest.mark.parametrize("kind", KINDS)
def test_a_draft_is_refused_and_the_committed_step_stays(
    tmp_path: Path, clock: Clock, kind: str
) -> None:
    planned = 1  # the plan (its steps bring their checks: no contract call)
    roles = _drafting(clock)
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        model_profile="small",
        candidate_zero=False,
        # The plan, step one's draft, step two's draft; its first witness is refused.
        **budget_of_calls(kind, planned + 2),
    )
    outcome = run_task("t", ctx, models=roles)

    assert counts(roles) == {"planner": planned, "executor": 2}
    assert_stopped(ctx, outcome, kind, planned + 2)
    assert "executor stopped before its next model call" in outcome.stop_reason
    assert outcome.step_status == {"adder": "committed", "subber": "pending"}
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert (ws.step(run, "adder").artifacts / "impl.py").read_text().strip() == BOTH.strip()
    assert outcome.result is not None  # the committed step is handed back


# --- the tool loop and the reflector's witnesses (standard profile) --------------------------


def _standard(clock: Clock) -> dict[str, ScriptedChatModel]:
    plan = Plan(steps=[step("one"), step("two")])
    executor = ExecutorScript({("one", 1): passing_attempt(), ("two", 1): passing_attempt()})
    return {role: metered(m, clock) for role, m in models([plan], executor).items()}


PLANNED = 3
"""The standard runs' planner calls: the plan, and a contract call per step."""


@pytest.mark.parametrize("kind", KINDS)
def test_a_turn_of_the_tool_loop_is_refused_and_the_committed_step_stays(
    tmp_path: Path, clock: Clock, kind: str
) -> None:
    roles = _standard(clock)
    # The plan, step one's three loop turns (the reflector asks no model), step two's first.
    calls = PLANNED + 3 + 1
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        model_profile="standard",
        candidate_zero=False,
        **budget_of_calls(kind, calls),
    )
    outcome = run_task("t", ctx, models=roles)

    assert counts(roles) == {"planner": PLANNED, "executor": 4}
    assert_stopped(ctx, outcome, kind, calls)
    assert "executor stopped before its next model call" in outcome.stop_reason
    assert outcome.step_status == {"one": "committed", "two": "pending"}
    # Step two's one turn was made and written to its staging, not committed.
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    two = ws.list_attempts(ws.step(run, "two"))
    assert len(two) == 1 and (two[0].staging / "impl.py").is_file()
    assert not (ws.step(run, "two").artifacts / "impl.py").exists()


def test_a_resumed_run_counts_what_it_spent_before(tmp_path: Path, clock: Clock) -> None:
    roles = _standard(clock)
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        candidate_zero=False,
        approve_plan=True,
        max_tokens=(PLANNED + 3 + 1) * TOKENS,
    )
    paused = run_task("t", ctx, models=roles)
    assert paused.status == "interrupted" and paused.usage["total_tokens"] == PLANNED * TOKENS
    outcome = resume_run(paused.run_id, ctx, answer="approve", models=roles)

    # The plan's 300 tokens count after the pause: step two gets one loop turn, not all three.
    assert counts(roles) == {"planner": PLANNED, "executor": 4}
    assert_stopped(ctx, outcome, "tokens", PLANNED + 3 + 1)


def test_a_streamed_run_is_held_to_its_budget_too(tmp_path: Path, clock: Clock) -> None:
    # Streaming runs nodes (and the tool loop's) on LangGraph's worker threads.
    roles = _standard(clock)
    calls = PLANNED + 3 + 1
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False, max_tokens=calls * TOKENS)
    events: list[Any] = []
    outcome = run_task("t", ctx, models=roles, on_event=lambda *event: events.append(event))
    assert counts(roles) == {"planner": PLANNED, "executor": 4}
    assert_stopped(ctx, outcome, "tokens", calls)
    assert any(e[0] == "custom" and e[1].get("event") == "run.budget" for e in events)


def test_a_reply_the_budget_cut_short_ends_the_node_and_its_tokens_count(
    tmp_path: Path, clock: Clock
) -> None:
    # A model that can take less than it was asked (the embedded one, a served one) raises the
    # budget's error with the reply the budget cut short: step two's first loop turn here.
    roles = _standard(clock)
    loop = roles["executor"].respond
    assert loop is not None

    def cut_on_the_fifth(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        reply = reply_of(loop, messages, info)
        if len(roles["executor"].calls) == 5:
            raise BudgetExhaustedError("token budget: cut (the model was stopped)", reply=reply)
        return reply  # type: ignore[return-value]

    roles["executor"].respond = cut_on_the_fifth
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False, max_tokens=10_000)
    outcome = run_task("t", ctx, models=roles)

    assert counts(roles) == {"planner": PLANNED, "executor": 5}
    assert outcome.status == "budget_exhausted"
    assert "the executor stopped there" in outcome.stop_reason
    assert outcome.usage["total_tokens"] == (PLANNED + 5) * TOKENS  # the cut reply counts
    assert outcome.step_status == {"one": "committed", "two": "pending"}


def test_a_run_without_budgets_is_not_watched(tmp_path: Path, clock: Clock) -> None:
    roles = _standard(clock)
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    outcome = run_task("t", ctx, models=roles)
    assert outcome.status == "done"
    assert counts(roles) == {"planner": PLANNED, "executor": 6}
    info = json.loads(Workspace(ctx.workspace).run(outcome.run_id).run_json.read_text())
    assert "budget" not in info


def test_a_budget_the_run_stays_within_is_reported_beside_what_it_used(
    tmp_path: Path, clock: Clock
) -> None:
    roles = _standard(clock)
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False, max_tokens=5000)
    outcome = run_task("t", ctx, models=roles)
    assert outcome.status == "done"
    run = Workspace(ctx.workspace).run(outcome.run_id)
    figures = json.loads(run.run_json.read_text())["budget"]
    assert figures["tokens"] == (PLANNED + 6) * TOKENS and figures["max_tokens"] == 5000
    assert "exhausted" not in figures
    assert "900 of 5000 tokens" in run.report_md.read_text()


# --- the time limit beside the plain answer (run_time_factor) --------------------------------


def _one_step(clock: Clock) -> dict[str, ScriptedChatModel]:
    executor = ExecutorScript({}, plain=f"```python\n{WRONG_BOTH}```")
    plan = Plan(steps=[step("both", criteria=["add(2, 3) == 5", "sub(5, 3) == 2"],
                            defines=["add", "sub"])])  # fmt: skip
    return {role: metered(m, clock) for role, m in models([plan], executor).items()}


@pytest.fixture
def timed_plain(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The plain answer is timed on the fake clock too: each metered call takes 10 s."""
    monkeypatch.setattr(candidates, "time", SimpleNamespace(monotonic=clock))
    return clock


def test_no_call_starts_after_the_time_limit_and_the_attempt_is_decided_on_what_it_has(
    tmp_path: Path, timed_plain: Clock
) -> None:
    # The plain answer (10 s) fails the task's examples; its two samples fail them too and
    # the plan takes a call (40 s). The limit is 5 x 10 s: the executor's first witness
    # starts at 40 s, its second is not asked. The cross-examination stops there, not the
    # run: the attempt is decided on the candidates it proved, with a verdict that says why.
    roles = _one_step(timed_plain)
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", run_time_factor=5)
    outcome = run_task(ORDERED, ctx, models=roles)

    assert counts(roles) == {"planner": 1, "executor": 4}
    assert outcome.status == "failed", outcome.stop_reason
    assert outcome.step_status == {"both": "failed"}
    assert "would not finish within the run's time limit" in outcome.stop_reason
    run = Workspace(ctx.workspace).run(outcome.run_id)
    attempts = sorted(run.path.glob("steps/*/attempts/*"))
    assert len(attempts) == 1 and (attempts[0] / "verdict.json").exists()
    drafts = json.loads((attempts[0] / "drafts.json").read_text())
    assert drafts["cut"] == (
        "time limit: 50.0s of 50.0s (5 x the plain answer's 10.0s for each of 1 step(s)): "
        "0 of 2 witnesses heard"
    )
    assert [c["origin"] for c in drafts["candidates"]] == ["plain", "witness"]
    verdict = json.loads((attempts[0] / "verdict.json").read_text())
    assert f"cross-examination cut short: {drafts['cut']}" in json.dumps(verdict)
    info = json.loads(run.run_json.read_text())
    assert info["budget"]["time_limit"] == 50.0
    assert info["deliverable"]["unverified"] is True
    assert outcome.result is not None
    assert (Path(outcome.result) / "plain_answer.py").read_text().strip() == WRONG_BOTH.strip()
    # What the task's checks found on the code handed back: they ran, at no model call.
    clauses = info["clauses"]
    assert clauses["of"] == "the plain answer handed back"
    assert clauses["failed"] and not clauses["not_run"]
    assert "not run" not in outcome.stop_reason, outcome.stop_reason


def test_without_the_time_limit_the_same_run_asks_its_witnesses(
    tmp_path: Path, timed_plain: Clock
) -> None:
    roles = _one_step(timed_plain)
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", run_time_factor=0,
                  max_attempts=1, max_replans=0)  # fmt: skip
    outcome = run_task(SAMPLED, ctx, models=roles)
    assert outcome.status == "failed"
    assert counts(roles)["executor"] > 4
    assert "budget" not in json.loads(
        Workspace(ctx.workspace).run(outcome.run_id).run_json.read_text()
    )


def test_the_time_limit_grows_with_the_plan_and_has_a_floor() -> None:
    ctx = Context()  # run_time_factor 5
    one = {"plain_seconds": 10.0}
    three = {"plain_seconds": 10.0, "plan": {"steps": [{}, {}, {}]}}
    assert time_limit(one, ctx) == (50.0, "5 x the plain answer's 10.0s for each of 1 step(s)")  # type: ignore[arg-type]
    assert time_limit(three, ctx)[0] == 150.0  # type: ignore[arg-type,index]
    assert time_limit({"plain_seconds": 2.0}, ctx)[0] == MIN_STEP_SECONDS  # type: ignore[arg-type,index]
    # A replayed or scripted plain answer costs nothing real to compare with; 0 turns it off.
    assert time_limit({"plain_seconds": 0.2}, ctx) is None  # type: ignore[arg-type]
    assert time_limit({}, ctx) is None  # type: ignore[arg-type]
    assert time_limit(one, Context(run_time_factor=0)) is None  # type: ignore[arg-type]


def test_after_the_time_limit_code_that_needs_no_call_is_still_proven_and_committed(
    tmp_path: Path, timed_plain: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Half the plain answer's 10 s, no floor: the limit passes with the plain answer itself.
    # It is right: the executor proves it on the step's checks and commits it, no call made.
    monkeypatch.setattr(common, "MIN_STEP_SECONDS", 0.0)
    executor = ExecutorScript({}, plain=f"```python\n{BOTH}```")
    roles = {role: metered(m, timed_plain) for role, m in models([], executor).items()}
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", run_time_factor=0.5)
    outcome = run_task(SAMPLED, ctx, models=roles)

    assert counts(roles) == {"planner": 0, "executor": 1}
    assert outcome.status == "done", outcome.stop_reason
    assert list(outcome.step_status.values()) == ["committed"]
    info = json.loads(Workspace(ctx.workspace).run(outcome.run_id).run_json.read_text())
    assert info["budget"]["time_limit"] == 5.0 and "exhausted" not in info["budget"]


def test_no_attempt_starts_that_the_time_limit_would_cut(
    tmp_path: Path, timed_plain: Clock
) -> None:
    # Limit 8 x 10 s. The plain answer and its two samples take 30 s, attempt 1 (three
    # witnesses) 30 s more: 20 s are left, less than an attempt takes. A retry would be cut
    # by the limit and thrown away; it is not started, and the verdict says why.
    roles = _one_step(timed_plain)
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", run_time_factor=8)
    began = timed_plain.t
    outcome = run_task(SAMPLED, ctx, models=roles)

    assert counts(roles) == {"planner": 0, "executor": 6}
    assert timed_plain.t - began == 60.0  # the 20 s left were not spent on a doomed attempt
    assert outcome.status == "failed", outcome.stop_reason
    run = Workspace(ctx.workspace).run(outcome.run_id)
    verdicts = sorted(run.path.glob("steps/*/attempts/*/verdict.json"))
    assert len(verdicts) == 1
    verdict = json.loads(verdicts[0].read_text())
    why = json.dumps(verdict)
    assert "would not finish within the run's time limit (this one took 30 s, 20 s are left)" in why
    assert "would not finish within the run's time limit" in run.report_md.read_text()
    # The user still gets the plain answer, labelled unverified.
    assert outcome.result is not None
    assert (Path(outcome.result) / "plain_answer.py").read_text().strip() == WRONG_BOTH.strip()
    # With time for one more attempt, the same run retries.
    roles = _one_step(timed_plain)
    ctx = Context(workspace=str(tmp_path / "ws2"), model_profile="small", run_time_factor=10)
    outcome = run_task(SAMPLED, ctx, models=roles)
    assert counts(roles)["executor"] == 10
