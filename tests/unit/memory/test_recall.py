"""Seed 004 §4.2.3: recall; plus semantic recall of a paraphrase."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from atom_agent.errors import MemoryValidationError, MissingSessionError
from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext


@pytest.fixture
def stocked(manager: MemoryManager, session: SessionContext) -> dict[str, str]:
    items = {
        "pytest": ("The test suite uses pytest with fixtures in conftest.py", "convention", 0.9),
        "postgres": ("The database is PostgreSQL 15", "fact", 0.95),
        "flaky": ("The network tests are flaky on CI", "risk", 0.6),
        "guess": ("Maybe the cache is never invalidated", "hypothesis", 0.3),
        "lru": ("Use an OrderedDict to implement the LRU cache", "lesson_learned", 0.8),
    }
    return {
        key: manager.remember(session, text, type=kind, confidence=conf).id
        for key, (text, kind, conf) in items.items()
    }


def test_type_filter(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    found = manager.recall(session, type="risk")
    assert [r.id for r in found] == [stocked["flaky"]]


def test_type_all_returns_every_type(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    found = manager.recall(session, type="all", min_confidence=0.0)
    assert {r.type.value for r in found} == {
        "convention",
        "fact",
        "risk",
        "hypothesis",
        "lesson_learned",
    }


def test_min_confidence(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    assert stocked["guess"] not in {r.id for r in manager.recall(session)}  # default floor 0.5
    high = manager.recall(session, min_confidence=0.9)
    assert {r.id for r in high} == {stocked["pytest"], stocked["postgres"]}
    assert stocked["guess"] in {r.id for r in manager.recall(session, min_confidence=0.0)}


def test_limit(manager: MemoryManager, session: SessionContext, stocked: dict[str, str]) -> None:
    assert len(manager.recall(session, min_confidence=0.0, limit=2)) == 2


@pytest.mark.parametrize("limit", [0, 51, -1, 2.5, True])
def test_limit_range(manager: MemoryManager, session: SessionContext, limit: object) -> None:
    with pytest.raises(MemoryValidationError, match="limit must be"):
        manager.recall(session, limit=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("floor", [-0.1, 1.5])
def test_min_confidence_range(
    manager: MemoryManager, session: SessionContext, floor: float
) -> None:
    with pytest.raises(MemoryValidationError, match="min_confidence must be between 0.0 and 1.0"):
        manager.recall(session, min_confidence=floor)


def test_unknown_type_filter(manager: MemoryManager, session: SessionContext) -> None:
    with pytest.raises(MemoryValidationError, match="type 'rumour' is not one of: all, fact"):
        manager.recall(session, type="rumour")


def test_query_is_case_insensitive_text_match(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    assert manager.recall(session, "POSTGRESQL")[0].id == stocked["postgres"]
    assert manager.recall(session, "postgresql")[0].id == stocked["postgres"]


def test_query_applies_after_type_and_confidence(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    # The best text match is a fact; restricted to conventions it cannot come back.
    found = manager.recall(session, "PostgreSQL database", type="convention")
    assert stocked["postgres"] not in {r.id for r in found}
    assert (
        manager.recall(session, "cache invalidated", min_confidence=0.5)[0].id != stocked["guess"]
    )


def test_query_leaves_out_unrelated_memories(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    found = manager.recall(session, "PostgreSQL")
    assert stocked["postgres"] in {r.id for r in found}
    assert stocked["flaky"] not in {r.id for r in found}


def test_paraphrase_is_found_semantically(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    # No word in common with "The test suite uses pytest with fixtures in conftest.py".
    found = manager.recall(session, "which test runner does this project use")
    assert found and found[0].id == stocked["pytest"]
    found = manager.recall(session, "where is the data stored")
    assert found and found[0].id == stocked["postgres"]


def test_recall_records_access(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    found = manager.recall(session, min_confidence=0.0)
    assert all(r.access_count == 1 and r.last_accessed_at is not None for r in found)
    for record in found:
        assert manager.get(session, record.id).access_count == 1
    manager.recall(session, "pytest", limit=1)
    assert manager.get(session, stocked["pytest"]).access_count == 2
    assert manager.get(session, stocked["postgres"]).access_count == 1


def test_empty_when_nothing_matches(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str]
) -> None:
    assert manager.recall(session, type="decision") == []
    assert manager.recall(session, min_confidence=1.0) == []


def test_tool_formats_count_and_memories(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str], memory_tools: Any
) -> None:
    recall = memory_tools(manager, session)[1]
    result = json.loads(recall.invoke({"query": "database", "limit": 1}))
    assert result["count"] == 1
    (memory,) = result["memories"]
    assert set(memory) == {"id", "content", "type", "confidence", "timestamp"}
    assert memory["id"] == stocked["postgres"] and memory["type"] == "fact"
    assert memory["confidence"] == 0.95 and memory["timestamp"].endswith("+00:00")


def test_missing_session(manager: MemoryManager) -> None:
    with pytest.raises(MissingSessionError, match="memory.recall needs a session context"):
        manager.recall(None)  # type: ignore[arg-type]


def test_recall_emits_telemetry(
    manager: MemoryManager, session: SessionContext, stocked: dict[str, str], events
) -> None:  # type: ignore[no-untyped-def]
    manager.recall(session, "cache", type="lesson_learned", min_confidence=0.7, limit=3)
    (fields,) = events.named("memory.recall")
    assert fields["query"] == "cache" and fields["memory_type"] == "lesson_learned"
    assert (fields["min_confidence"], fields["limit"], fields["count"]) == (0.7, 3, 1)
    assert fields["session_id"] == "s1"


def test_sorted_by_relevance_then_recency(manager: MemoryManager, session: SessionContext) -> None:
    old = manager.remember(session, "Deployment happens every Friday")
    time.sleep(0.01)
    new = manager.remember(session, "The logo is blue")
    assert [r.id for r in manager.recall(session)] == [new.id, old.id]  # no query: newest first
    found = manager.recall(session, "when do we deploy?")
    assert found[0].id == old.id  # with a query: relevance first
    assert found[0].score is not None
