"""Tiered context reconstruction: pinned always, tier 1 before tier 2, pairs never split."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from tests.unit.graph.scripts import step

from atom_agent import Context
from atom_agent.memory import MemoryManager
from atom_agent.memory.rules import record_rules
from atom_agent.nodes.executor.prompt import draft_notes, estimate_tokens, reconstruct_context
from atom_agent.rule_text import find_rules
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.workspace import Workspace


def _setup(tmp_path: Path, failures: int = 2) -> tuple[Workspace, Plan, object, object]:
    ws = Workspace(tmp_path / "ws")
    cache_step = step("cache", depends_on=["base"]).model_copy(
        update={"description": "Implement an LRU cache: evict the least recently used key."}
    )
    plan = Plan(steps=[step("base"), cache_step])
    run = ws.create_run("r1", task="build a cache")
    for s in plan.steps:
        ws.create_step(run, s.id, depends_on=s.depends_on)
    base = ws.step(run, "base")
    first = ws.new_attempt(base)
    (first.staging / "impl.py").write_text(
        "def get(key):\n    return key\n\nclass Store:\n    pass\n"
    )
    ws.commit(base, first)
    cache = ws.step(run, "cache")
    for n in range(1, failures + 1):
        attempt = ws.new_attempt(cache)
        call = {"name": "run_tests", "args": {}, "id": f"c{n}", "type": "tool_call"}
        ws.write_history(
            attempt,
            [
                HumanMessage("prompt"),
                AIMessage(content="", tool_calls=[call]),
                ToolMessage(
                    content=f"FAILED test_evict_{n}", tool_call_id=f"c{n}", name="run_tests"
                ),
            ],
        )
        ws.write_verdict(
            attempt,
            {
                "outcome": "failed",
                "feedback": f"eviction order wrong in attempt {n}",
                "tests": {
                    "summary": "0 passed, 1 failed",
                    "output_tail": "E" * 1200 + f"\nassert {n} == 0",
                },
            },
        )
    current = ws.new_attempt(cache)
    return ws, plan, cache, current


def _build(tmp_path: Path, budget: int, memory: MemoryManager | None = None) -> object:
    ws, plan, cache, current = _setup(tmp_path)
    session = SessionContext(session_id="r1", project_id="p")
    return reconstruct_context(
        ctx=Context(workspace=str(tmp_path / "ws"), context_token_budget=budget),
        task="build a cache",
        plan=plan,
        step=plan.steps[1],
        statuses={"base": "committed", "cache": "pending"},
        workspace=ws,
        step_ref=cache,  # type: ignore[arg-type]
        attempt=current,  # type: ignore[arg-type]
        files_text="Write impl.py and test.py.",
        memory=memory,
        session=session,
    )


def test_everything_fits_in_a_large_budget(tmp_path: Path) -> None:
    prompt = _build(tmp_path, budget=20_000)
    text = prompt.text  # type: ignore[attr-defined]
    assert "# Your step: cache" in text and "Attempt 3 of" in text
    # Tier 1: most recent attempt first, feedback and test output kept.
    assert text.index("## Attempt 2") < text.index("## Attempt 1")
    assert "eviction order wrong in attempt 2" in text and "assert 2 == 0" in text
    # Tier 2: the dependency's committed path and its signatures.
    assert "deps/base/" in text and "def get(key):" in text and "class Store:" in text
    assert "## Attempt 1" in text and "Attempt 1 called run_tests(" in text


def test_a_small_budget_prunes_oldest_first_and_never_splits_a_pair(tmp_path: Path) -> None:
    big = _build(tmp_path / "a", budget=20_000)
    pinned_only = _build(tmp_path / "b", budget=600)
    text = pinned_only.text  # type: ignore[attr-defined]
    assert "# Your step: cache" in text  # pinned survives any budget
    assert pinned_only.tokens < big.tokens  # type: ignore[attr-defined]
    assert "## Attempt 1" not in text  # the oldest attempt's units go first
    # Whatever survived of a call survived with its result.
    for line in text.splitlines():
        if " called run_tests(" in line:
            assert "→" in text[text.index(line) :].split("\n", 2)[1]
    medium = _build(tmp_path / "c", budget=estimate_tokens(big.text) - 60)  # type: ignore[attr-defined]
    medium_text = medium.text  # type: ignore[attr-defined]
    if "## Attempt 1" in medium_text:
        assert "## Attempt 2" in medium_text  # never the older without the newer


def test_relevant_memories_are_in_tier_two(tmp_path: Path) -> None:
    manager = MemoryManager.open(tmp_path / "mem")
    try:
        session = SessionContext(session_id="s", project_id="p")
        manager.remember(session, "LRU eviction must drop the least recently used key first",
                         type="lesson_learned", confidence=0.9)  # fmt: skip
        manager.remember(session, "The office coffee machine is on floor three", confidence=0.9)
        prompt = _build(tmp_path, budget=20_000, memory=manager)
        text = prompt.text  # type: ignore[attr-defined]
        assert "LRU eviction must drop the least recently used key first" in text
        assert "coffee machine" not in text  # irrelevant memories stay out
        assert list(prompt.memory_reasons.values()) == ["shares purpose: evict, recently"]  # type: ignore[attr-defined]
    finally:
        manager.close()


def test_draft_notes_keep_what_shares_a_name_and_say_why(tmp_path: Path) -> None:
    manager = MemoryManager.open(tmp_path / "mem")
    try:
        session = SessionContext(session_id="s", project_id="p")
        named = manager.remember(session, "lru_get must move the key to the front.",
                                 type="lesson_learned", confidence=0.9)  # fmt: skip
        # Related by purpose only: too loose for a small model's few lines.
        manager.remember(session, "Cache eviction: drop the least recently used entry.",
                         type="lesson_learned", confidence=0.9)  # fmt: skip
        cache = step("cache", defines=["lru_get"]).model_copy(
            update={"description": "An LRU cache: evict the least recently used key."}
        )
        ctx = Context(workspace=str(tmp_path / "ws"))
        lines, reasons = draft_notes(manager, session, ctx, cache, "build a cache")
        assert lines == ["lru_get must move the key to the front."]
        assert reasons == {named.id: "shares name lru_get"}
        # Recall turned off: the same memories are there, none reaches a prompt.
        off = Context(workspace=str(tmp_path / "ws"), memory_recall_limit=0)
        assert draft_notes(manager, session, off, cache, "build a cache") == ([], {})
    finally:
        manager.close()


def test_a_rule_never_rides_as_a_recalled_note_beside_the_rules_block(tmp_path: Path) -> None:
    """A project rule that names the step's function is carried once, by the rules block."""
    manager = MemoryManager.open(tmp_path / "mem")
    try:
        session = SessionContext(session_id="s", project_id="p", run_id="r1")
        said = "From now on, lru_get raises CacheMiss for a key it does not hold."
        recorded = record_rules(manager, session, find_rules(said), origin="task")
        assert recorded.written  # the rule is in memory, and shares a name with the step
        named = manager.remember(session, "lru_get must move the key to the front.",
                                 type="lesson_learned", confidence=0.9)  # fmt: skip
        cache = step("cache", defines=["lru_get"])
        ctx = Context(workspace=str(tmp_path / "ws"))
        lines, reasons = draft_notes(manager, session, ctx, cache, "build a cache")
        assert lines == ["lru_get must move the key to the front."]
        assert list(reasons) == [named.id]
    finally:
        manager.close()


def test_rules_in_force_take_no_recall_slot_from_the_memories_a_step_can_use(
    tmp_path: Path,
) -> None:
    """With as many rules naming the step as recall returns, a lesson still reaches the draft."""
    manager = MemoryManager.open(tmp_path / "mem")
    try:
        session = SessionContext(session_id="s", project_id="p", run_id="r1")
        said = (
            "From now on, lru_get raises CacheMiss for a key it does not hold. "
            "From now on, lru_get logs every eviction of lru_get's cache. "
            "From now on, lru_get takes the key as its first parameter in lru_get calls."
        )
        assert len(record_rules(manager, session, find_rules(said), origin="task").written) == 3
        named = manager.remember(session, "lru_get must move the key to the front.",
                                 type="lesson_learned", confidence=0.6)  # fmt: skip
        cache = step("cache", defines=["lru_get"])
        ctx = Context(workspace=str(tmp_path / "ws"), memory_recall_limit=2)
        lines, reasons = draft_notes(manager, session, ctx, cache, "build a cache")
        assert lines == ["lru_get must move the key to the front."]
        assert list(reasons) == [named.id]
    finally:
        manager.close()
