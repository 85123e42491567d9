"""Runs that learn, visibly: what a run writes, what the next run recalls, and writes that a
crash (an injected fault or a real SIGKILL) right after any of them does not repeat.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from atom_agent import Context, resume_run, run_task
from atom_agent.memory import MemoryManager
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.learning import interface_lines, record_interface
from atom_agent.session import SessionContext
from atom_agent.state import Plan, PlanStep
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from . import learning_factory as lf
from .scripts import planner_model

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "atom_agent.cli"]
SMALL_NAME = "qwen2.5-coder:1.5b"
TIMES = "def add(a, b):\n    return a * b\n"
FAILURE = lf.FAILURE


def _memories(ctx: Context) -> list[dict[str, object]]:
    manager = MemoryManager.from_context(ctx)
    try:
        return manager.export(SessionContext(session_id="check", project_id=ctx.project_id))
    finally:
        manager.close()


def _run_json(ctx: Context, run_id: str) -> dict[str, object]:
    ws = Workspace(ctx.workspace)
    return ws.read_run(ws.run(run_id))


def test_the_interface_is_read_from_the_code() -> None:
    source = (
        '"""Module."""\nimport os\n\nLIMIT = 3\n\n'
        "def add(a: int, b: int = 1) -> int:\n"
        '    """Add two numbers.\n\n    More text.\n    """\n    return a + b\n\n'
        "def _helper():\n    pass\n\n"
        "class Cache(dict):\n"
        '    """An LRU cache."""\n'
        "    def __init__(self, capacity):\n        self.capacity = capacity\n"
        "    def get(self, key, default=None):\n        return default\n"
        "    def _evict(self):\n        pass\n\n"
        "async def fetch(url, *, timeout=5.0):\n    return url\n"
    )
    assert interface_lines(source) == [
        "def add(a: int, b: int=1) -> int — Add two numbers.",
        "class Cache(dict) — An LRU cache.",
        "    def __init__(self, capacity)",
        "    def get(self, key, default=None)",
        "async def fetch(url, *, timeout=5.0)",
    ]
    assert interface_lines("def broken(:\n") == []


def test_a_later_commit_in_the_same_run_supersedes_the_interface_not_yet_written(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    session = SessionContext(session_id="r", project_id=ctx.project_id, run_id="r")
    step = lf.adder_step()
    impl = tmp_path / "v1"
    impl.mkdir()
    (impl / "impl.py").write_text(lf.RIGHT)
    with MemoryManager.from_context(ctx) as memory:
        first = MemoryChanges(replace(session, step_id="adder", attempt=1))
        (old,) = record_interface(memory, first, step, impl)
        earlier = MemoryChanges.from_data(session, [first.to_data()]).records
        second = MemoryChanges(replace(session, step_id="adder", attempt=2))
        (new,) = record_interface(memory, second, step, impl, earlier=earlier)
        assert [(c.memory_id, c.kind, c.requires) for c in second.changes] == [(old, "forget", new)]
        merged = MemoryChanges.from_data(session, [first.to_data(), second.to_data()])
        assert memory.apply(merged).missing == []
        assert memory.get(session, old).superseded_by == new


def test_a_failure_of_run_a_reaches_the_prompt_of_a_related_run_b(tmp_path: Path) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    roles_a, _ = lf.roles(Plan(steps=[lf.adder_step()]), {("adder", 1): lf.wrong_attempt()})
    run_a = run_task("Write the adder.", ctx, models=roles_a)
    assert run_a.status == "failed"
    (lesson,) = [m for m in _memories(ctx) if m["type"] == "lesson_learned"]
    # The failed check says what went wrong; the test's own failure line would repeat it.
    assert FAILURE in str(lesson["content"]) and "its tests failed" not in str(lesson["content"])
    assert (lesson["source_type"], lesson["run_id"], lesson["step_id"], lesson["attempt"]) == (
        "reflector", run_a.run_id, "adder", 1,
    )  # fmt: skip
    report_a = Path(str(run_a.report)).read_text()
    written_a = report_a.split("## Memories written", 1)[1].split("## Memories recalled", 1)[0]
    assert f"`{lesson['id']}` (lesson_learned)" in written_a

    # Run B: another task, another step, the same function.
    calc = PlanStep(
        id="calc",
        title="calculator addition",
        description="The calculator's add(a, b) returns the sum of a and b.",
        acceptance_criteria=["add(2, 3) == 5"],
        defines=["add"],
        checks=[lf.ADD_CHECK],
    )
    roles_b, executor_b = lf.roles(Plan(steps=[calc]), {("calc", 1): lf.right_attempt()})
    run_b = run_task("Build a small calculator that adds.", ctx, models=roles_b)
    assert run_b.status == "done"
    prompt = executor_b.prompts[("calc", 1)]
    tier2 = prompt.split("# What earlier work established", 1)[1]
    assert FAILURE in tier2  # the lesson, in the executor prompt the model received
    report_b = Path(str(run_b.report)).read_text()
    recalled_b = report_b.split("## Memories recalled", 1)[1]
    assert f"`{lesson['id']}` (lesson_learned)" in recalled_b
    notes = _run_json(ctx, run_b.run_id)["memories"]
    assert lesson["id"] in [m["id"] for m in notes["recalled"]]  # type: ignore[index]
    assert [m["type"] for m in notes["written"]] == ["fact"]  # type: ignore[index]


def test_a_run_writes_what_it_learned_once_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two attempts fail the same way, the third passes: one lesson (the second is the same as
    # the first, which the run had learned but not yet written) and the interface, in one
    # write by the finish node.
    applied: list[list[str]] = []
    original = MemoryManager.apply

    def spy(self: MemoryManager, changes: Any) -> Any:
        applied.append([r.type.value for r in changes.records])
        return original(self, changes)

    monkeypatch.setattr(MemoryManager, "apply", spy)
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=3, max_replans=0, candidate_zero=False
    )
    script = {("adder", 1): lf.wrong_attempt(), ("adder", 2): lf.wrong_attempt(),
              ("adder", 3): lf.right_attempt()}  # fmt: skip
    roles, _ = lf.roles(Plan(steps=[lf.adder_step()]), script)
    outcome = run_task("Write the adder.", ctx, models=roles)
    assert outcome.status == "done"
    assert applied == [["lesson_learned", "fact"]]
    stored = _memories(ctx)
    assert sorted(str(m["type"]) for m in stored) == ["fact", "lesson_learned"]
    written = _run_json(ctx, outcome.run_id)["memories"]["written"]  # type: ignore[index]
    assert sorted(m["id"] for m in written) == sorted(str(m["id"]) for m in stored)


def test_a_small_model_gets_the_lesson_in_its_draft_prompt_after_the_task(
    tmp_path: Path,
) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    step = lf.adder_step()

    def small(codes: list[str]) -> dict[str, ScriptedChatModel]:
        queue = list(codes)

        def respond(messages: list[BaseMessage]) -> object:
            code = queue.pop(0) if len(queue) > 1 else queue[0]
            return lf.AIMessage(content=f"```python\n{code}```")

        return {
            "planner": planner_model([Plan(steps=[step])]),
            "executor": ScriptedChatModel(respond=respond, model_name=SMALL_NAME),
        }

    # The draft subtracts; independent witnesses disagree with it and with each other.
    run_a = run_task("Write the adder.", ctx, models=small([lf.WRONG, TIMES, lf.WRONG]))
    assert run_a.status == "failed"
    manager = MemoryManager.from_context(ctx)
    try:  # a confident memory about something else stays out of the small model's prompt
        unrelated = SessionContext(session_id="user", project_id=ctx.project_id)
        manager.remember(unrelated, "The calculator's parser reads numbers.", confidence=0.95)
    finally:
        manager.close()
    roles_b = small([lf.RIGHT])
    task_b = "Build the calculator's adder: the sum of 1 and 1 is 2."
    run_b = run_task(task_b, ctx, models=roles_b)
    assert run_b.status == "done"
    prompt = str(roles_b["executor"].calls[0].messages[0].content)
    assert "Notes from earlier runs" in prompt, prompt
    notes = prompt.split("Notes from earlier runs", 1)[1]
    assert FAILURE in notes and "parser" not in prompt
    assert prompt.index(task_b) < prompt.index("Notes from earlier runs")  # the task comes first
    assert len(notes.split("```python", 1)[0].strip().splitlines()) <= 5  # a few short lines
    ws = Workspace(ctx.workspace)
    verdict = ws.read_verdict(ws.attempt(ws.step(ws.run(run_b.run_id), "adder"), 1))
    assert verdict["memories_recalled"]  # the draft's memories are accounted for


def _drive(ctx: Context, run_id: str) -> str:
    """Run the learning scenario to its end, resuming after every crash; returns the status."""
    try:
        outcome = run_task("Write the adder.", ctx, models=lf.learns_everything(), run_id=run_id)
    except lf.Crash:
        outcome = None
    for _ in range(10):
        if outcome is not None and outcome.status not in ("interrupted",):
            return outcome.status
        answer = lf.ANSWER if outcome is not None else None
        if outcome is None:
            ws = Workspace(ctx.workspace)
            snapshot = json.loads((ws.runs_dir / run_id / "run.json").read_text())
            assert snapshot["task"]
        try:
            outcome = resume_run(run_id, ctx, answer=answer, models=lf.learns_everything())
        except lf.Crash:
            outcome = None
        except Exception as exc:  # waiting for the answer the killed process never gave
            if "waiting for an answer" not in str(exc):
                raise
            outcome = resume_run(run_id, ctx, answer=lf.ANSWER, models=lf.learns_everything())
    raise AssertionError("the run did not end")


def _contents(ctx: Context) -> Counter[tuple[object, object]]:
    return Counter((m["type"], m["content"]) for m in _memories(ctx))


def test_a_crash_after_every_write_of_reflector_and_finish_duplicates_no_memory(
    tmp_path: Path,
) -> None:
    def crash() -> None:
        raise lf.Crash

    clean = Context(
        workspace=str(tmp_path / "clean"), max_attempts=2, max_replans=0, candidate_zero=False
    )
    log = tmp_path / "clean.log"
    lf.arm(log, 0, crash)
    try:
        assert _drive(clean, "r1") == "done"
        writes = log.read_text().splitlines()
        expected = _contents(clean)
        assert sorted(t for t, _ in expected) == ["decision", "fact", "lesson_learned"]
        (failure,) = [c for t, c in expected if t == "lesson_learned"]
        assert "its tests failed" in str(failure)  # attempt 1's, from the executed tests
        assert "reflector apply" not in writes  # a verdict's lessons wait in the state
        assert set(writes) >= {
            "reflector commit",
            "finish apply",
            "finish write_report",
        }
        for n in range(1, len(writes) + 1):
            ctx = Context(
                workspace=str(tmp_path / f"k{n}"),
                max_attempts=2,
                max_replans=0,
                candidate_zero=False,
            )
            lf.arm(tmp_path / f"k{n}.log", n, crash)
            assert _drive(ctx, "r1") == "done", f"killed after write {n}: {writes[n - 1]}"
            got = _contents(ctx)
            assert got == expected, f"killed after write {n} ({writes[n - 1]}): {got}"
    finally:
        lf.disarm()


def _env(tmp_path: Path, factory: str = "one_step", **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    env.update(
        PYTHONPATH=str(REPO),
        ATOM_WORKSPACE=str(tmp_path / "ws"),
        ATOM_SANDBOX_TIMEOUT_S="30",
        ATOM_MODELS_FACTORY=f"tests.unit.graph.learning_factory:{factory}",
        **extra,
    )
    return env


@pytest.mark.parametrize("kill_at", ["reflector commit", "finish apply"])
def test_sigkill_around_the_run_s_lessons_then_resume_writes_them_once(
    tmp_path: Path, kill_at: str
) -> None:
    log = tmp_path / "writes.log"
    # Attempt 1 fails (a failure lesson), attempt 2 commits (the interface). Killed after that
    # commit (the lessons only in the checkpoint, not yet stored) or right after the finish
    # node wrote them (stored, but the finish node's checkpoint not saved).
    env = _env(
        tmp_path,
        "fails_once",
        ATOM_TEST_WRITES=str(log),
        ATOM_TEST_KILL_AT=kill_at,
        ATOM_CANDIDATE_ZERO="false",
    )
    killed = subprocess.run(
        [*CLI, "run", "Write the adder.", "--run-id", "k1"],
        env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert log.read_text().splitlines()[-1] == kill_at
    resumed = subprocess.run(
        [*CLI, "resume", "k1", "--json"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "done"
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    contents = _contents(ctx)
    assert sorted(t for t, _ in contents.elements()) == ["fact", "lesson_learned"]
    (lesson,) = [c for t, c in contents.elements() if t == "lesson_learned"]
    assert FAILURE in str(lesson)


def test_memory_list_shows_what_a_one_step_run_learned(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), candidate_zero=False)
    outcome = run_task("Write the adder.", ctx, models=lf.one_step())
    assert outcome.status == "done"
    listing = subprocess.run(
        [*CLI, "memory", "list", "--workspace", str(tmp_path / "ws")],
        env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert "Code committed for 'add two numbers'" in listing.stdout
    assert "def add(a, b) — Add two numbers." in listing.stdout
    report = Path(str(outcome.report)).read_text()
    assert "## Memories written" in report and "(fact) Code committed for" in report
