"""Memory through runs: lessons written with provenance, recalled into the next run's prompt."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.memory import MemoryManager
from atom_agent.memory.relevance import INTERFACE_TAG
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.testing import tool_call
from atom_agent.workspace import Workspace

from .scripts import ExecutorScript, all_met, failing_attempt, models, passing_attempt, step

LESSON = "Adder steps: test integer addition with add(2, 3) == 5 before edge cases."


@pytest.fixture
def ctx(ctx: Context) -> Context:
    # ExecutorScript answers executor prompts only; the plain call of candidate zero is not one.
    return dataclasses.replace(ctx, candidate_zero=False)


def test_a_lesson_from_one_run_reaches_the_next_run_and_is_reinforced(ctx: Context) -> None:
    adder = step("adder", defines=["add"])  # the lesson names add(): it belongs to this step
    first = ExecutorScript({("adder", 1): passing_attempt()})
    run1 = run_task(
        "add", ctx, models=models([Plan(steps=[adder])], first, [all_met(adder, LESSON)])
    )
    assert run1.status == "done"

    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        lessons = manager.recall(session, type="lesson_learned")
        assert [m.content for m in lessons] == [LESSON]
        record = lessons[0]
        assert (record.source_type, record.run_id, record.step_id, record.attempt) == (
            "reflector", run1.run_id, "adder", 1,
        )  # fmt: skip
        confidence_before = record.confidence
    finally:
        manager.close()

    second = ExecutorScript({("adder", 1): passing_attempt()})
    run2 = run_task("add again", ctx, models=models([Plan(steps=[adder])], second))
    assert run2.status == "done"
    assert LESSON in second.prompts[("adder", 1)]  # tier 2 of the new run's prompt

    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        again = manager.get(session, record.id)
        assert again.confidence > confidence_before  # reinforced: the step it informed passed
    finally:
        manager.close()


def test_recurring_failures_are_promoted_from_working_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"),
        max_attempts=3,
        max_replans=0,
        memory_promotion_threshold=0.6,
        candidate_zero=False,
    )
    executor = ExecutorScript({("adder", n): failing_attempt() for n in (1, 2, 3)})
    outcome = run_task("add", ctx, models=models([Plan(steps=[step("adder")])], executor))
    assert outcome.status == "failed"
    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        promoted = [m for m in manager.recall(session) if m.source_type == "system"]
        assert len(promoted) == 1
        assert "tests failed" in promoted[0].content and "assert 5 == 6" in promoted[0].content
    finally:
        manager.close()


def test_the_agent_can_remember_through_its_tool(ctx: Context) -> None:
    script = [
        tool_call("remember", {"content": "Use integers only", "type": "decision"}),
        *passing_attempt(),
    ]
    executor = ExecutorScript({("adder", 1): script})
    outcome = run_task("add", ctx, models=models([Plan(steps=[step("adder")])], executor))
    assert outcome.status == "done"
    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        decisions = manager.recall(session, type="decision")
        assert [(d.content, d.source_type, d.step_id) for d in decisions] == [
            ("Use integers only", "agent", "adder")
        ]
    finally:
        manager.close()


RELATED = "add(a, b) must accept negative numbers too: add(-1, 1) == 0."
UNRELATED = (
    "Code committed for 'Vector adder' (impl.py) defines:\n"
    "- def vector_sum(xs, ys) — element-wise addition of two vectors"
)


def test_only_a_memory_that_shares_something_with_the_step_reaches_its_prompt(
    ctx: Context,
) -> None:
    manager = MemoryManager.from_context(ctx)
    try:
        earlier = SessionContext(session_id="earlier", project_id=ctx.project_id)
        related = manager.remember(earlier, RELATED, type="lesson_learned", confidence=0.9)
        # Another task's committed interface: it shares words ("adder", "addition"), no name.
        unrelated = manager.remember(
            earlier,
            UNRELATED,
            confidence=0.9,
            rationale=f"{INTERFACE_TAG}vec; names: vector_sum",
            source_type="reflector",
        )
        recalled = manager.recall(earlier, "Step adder. Implement adder. Defines: add")
        assert {related.id, unrelated.id} <= {r.id for r in recalled}  # similarity finds both
    finally:
        manager.close()

    adder = step("adder", defines=["add"])
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    outcome = run_task("Write the adder.", ctx, models=models([Plan(steps=[adder])], executor))
    assert outcome.status == "done"

    prompt = executor.prompts[("adder", 1)]
    assert RELATED in prompt
    assert "vector_sum" not in prompt and "Vector adder" not in prompt

    ws = Workspace(ctx.workspace)
    verdict = ws.read_verdict(ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1))
    assert verdict["memories_recalled"] == [{"id": related.id, "why": "shares name add"}]
    run_json = json.loads((ws.runs_dir / outcome.run_id / "run.json").read_text())
    assert [(m["id"], m["why"]) for m in run_json["memories"]["recalled"]] == [
        (related.id, "shares name add")
    ]
    report = Path(str(outcome.report)).read_text()
    recalled_section = report.split("## Memories recalled", 1)[1].split("## Usage", 1)[0]
    assert f"`{related.id}` (lesson_learned)" in recalled_section
    assert "*shares name add*" in recalled_section
    assert unrelated.id not in recalled_section

    manager = MemoryManager.from_context(ctx)
    try:  # the step passed: the memory in its prompt is reinforced, the one kept out is not
        check = SessionContext(session_id="check", project_id=ctx.project_id)
        assert manager.get(check, related.id).confidence > related.confidence
        assert manager.get(check, unrelated.id).confidence == unrelated.confidence
    finally:
        manager.close()
