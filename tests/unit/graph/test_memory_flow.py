"""Memory through runs: lessons written with provenance, recalled into the next run's prompt."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.memory import MemoryManager
from atom_agent.memory.relevance import INTERFACE_TAG
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.testing import tool_call
from atom_agent.workspace import Workspace

from . import factory
from .scripts import ExecutorScript, failing_attempt, models, passing_attempt, step


@pytest.fixture
def ctx(ctx: Context) -> Context:
    # ExecutorScript answers executor prompts only; the plain call of candidate zero is not one.
    return dataclasses.replace(ctx, candidate_zero=False)


def test_a_lesson_from_one_run_reaches_the_next_run_and_is_reinforced(ctx: Context) -> None:
    adder = step("adder", defines=["add"])  # the lesson names add(): it belongs to this step
    # Attempt 1's test fails (the executed evidence teaches a lesson); attempt 2 passes.
    first = ExecutorScript({("adder", 1): failing_attempt(), ("adder", 2): passing_attempt()})
    run1 = run_task("add", ctx, models=models([Plan(steps=[adder])], first))
    assert run1.status == "done"

    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        (record,) = manager.recall(session, type="lesson_learned")
        assert "its tests failed" in record.content and "assert 5 == 6" in record.content
        assert "(add)" in record.content  # it names the step's function
        assert (record.source_type, record.run_id, record.step_id, record.attempt) == (
            "reflector", run1.run_id, "adder", 1,
        )  # fmt: skip
        confidence_before = record.confidence
    finally:
        manager.close()

    second = ExecutorScript({("adder", 1): passing_attempt()})
    run2 = run_task("add again", ctx, models=models([Plan(steps=[adder])], second))
    assert run2.status == "done"
    assert record.content in second.prompts[("adder", 1)]  # tier 2 of the new run's prompt

    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        again = manager.get(session, record.id)
        assert again.confidence > confidence_before  # reinforced: the step it informed passed
    finally:
        manager.close()


def test_the_batch_factory_writes_one_failure_lesson_of_its_own_per_run(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What tests/integration/test_batch_shared_memory.py counts in its shared memory: each run
    # of `batch_models` with ATOM_TEST_LESSONS writes exactly one lesson, none deduplicated.
    monkeypatch.setenv("ATOM_TEST_LESSONS", "1")
    runs = [run_task(f"t {i}", ctx, models=factory.batch_models()) for i in range(2)]
    assert [r.status for r in runs] == ["done", "done"]
    manager = MemoryManager.from_context(ctx)
    try:
        session = SessionContext(session_id="check", project_id=ctx.project_id)
        lessons = manager.recall(session, type="lesson_learned", limit=50)
    finally:
        manager.close()
    assert sorted(m.run_id for m in lessons) == sorted(r.run_id for r in runs)
    assert len({m.content for m in lessons}) == 2
    for lesson in lessons:
        assert lesson.attempt == 1 and "its tests failed" in lesson.content
        assert f"lesson {os.getpid()}-" in lesson.content


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


def test_a_lesson_carried_into_failing_steps_loses_confidence_until_it_is_not_recalled(
    ctx: Context, capsys: pytest.CaptureFixture[str]
) -> None:
    from atom_agent.cli import main

    ctx = dataclasses.replace(ctx, max_attempts=1, max_replans=0)
    adder = step("adder", defines=["add"])
    manager = MemoryManager.from_context(ctx)
    try:
        seed = SessionContext(session_id="seed", project_id=ctx.project_id)
        lesson = manager.remember(seed, "add() must subtract its second argument",
                                  type="lesson_learned", confidence=0.6)  # fmt: skip
    finally:
        manager.close()
    prompts: list[str] = []
    for i in range(3):
        script = ExecutorScript({("adder", 1): failing_attempt()})
        run = run_task(f"add {i}", ctx, models=models([Plan(steps=[adder])], script))
        assert run.status != "done"
        prompts.append(script.prompts[("adder", 1)])
    # Carried into two failing steps: 0.6 -> 0.51 -> 0.43, under the recall floor (0.5), so
    # the third run's prompt no longer carries it.
    assert lesson.content in prompts[0] and lesson.content in prompts[1]
    assert lesson.content not in prompts[2]
    manager = MemoryManager.from_context(ctx)
    try:
        again = manager.get(SessionContext(session_id="c", project_id=ctx.project_id), lesson.id)
    finally:
        manager.close()
    assert (again.contradicted, again.reinforced) == (2, 0)
    assert again.confidence < ctx.memory_min_confidence
    assert again.last_evidence and "step adder failed" in again.last_evidence
    args = ["memory", "--workspace", ctx.workspace, "--project", ctx.project_id, "show", lesson.id]
    assert main(args) == 0
    assert "track record: carried into 2 step(s) that ended: 0 passed, 2 failed" in (
        capsys.readouterr().out
    )
