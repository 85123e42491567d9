"""Seed 004 §4.1.3: remember."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from atom_agent.errors import MemoryValidationError, MissingSessionError
from atom_agent.memory import MemoryManager, MemoryType
from atom_agent.memory.records import unpack_metadata
from atom_agent.memory.store import collection_name
from atom_agent.session import SessionContext


def test_remember_creates_memory_with_given_type(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "Use ruff for linting", type="convention")
    assert record.type is MemoryType.CONVENTION
    assert manager.get(session, record.id).type is MemoryType.CONVENTION


def test_defaults_type_fact_and_confidence_08(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "The service listens on port 8080")
    assert record.type is MemoryType.FACT
    assert record.confidence == pytest.approx(0.8)


@pytest.mark.parametrize(("given", "stored"), [(1.7, 1.0), (-0.3, 0.0), (0.42, 0.42)])
def test_confidence_is_clamped(
    manager: MemoryManager, session: SessionContext, given: float, stored: float
) -> None:
    record = manager.remember(session, f"clamp {given}", confidence=given)
    assert record.confidence == pytest.approx(stored)
    assert manager.get(session, record.id).confidence == pytest.approx(stored)


@pytest.mark.parametrize("content", ["", "   ", None, 12])
def test_content_must_be_non_empty_text(
    manager: MemoryManager, session: SessionContext, content: object
) -> None:
    with pytest.raises(MemoryValidationError, match="content must be a non-empty string"):
        manager.remember(session, content)  # type: ignore[arg-type]
    assert manager.export(session) == []


def test_content_max_length(manager: MemoryManager, session: SessionContext) -> None:
    manager.remember(session, "x" * 2000)
    with pytest.raises(MemoryValidationError, match="2001 characters; the limit is 2000"):
        manager.remember(session, "y" * 2001)
    assert len(manager.export(session)) == 1


def test_type_must_be_in_enum(manager: MemoryManager, session: SessionContext) -> None:
    with pytest.raises(
        MemoryValidationError, match="type 'opinion' is not one of: fact, assumption"
    ):
        manager.remember(session, "something", type="opinion")


def test_ids_are_unique(manager: MemoryManager, session: SessionContext) -> None:
    ids = {manager.remember(session, "the same sentence").id for _ in range(20)}
    assert len(ids) == 20
    assert all(len(i) == 24 for i in ids)


def test_tool_sets_source_agent_and_max_importance(
    manager: MemoryManager, session: SessionContext, memory_tools: Any
) -> None:
    remember = memory_tools(manager, session)[0]
    result = json.loads(remember.invoke({"content": "CI runs on GitHub Actions"}))
    stored = manager.get(session, result["memory_id"])
    assert stored.source_type.value == "agent"
    assert stored.importance == 1.0


def test_persists_immediately_with_provenance(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "Migrations live in db/migrations", rationale="seen in repo")
    # Straight from Chroma, not through the manager's mirror.
    collection = manager.backend.client.get_collection(collection_name("memory", "alpha"))
    got = collection.get(ids=[record.id], include=["documents", "metadatas"])
    meta = unpack_metadata(got["metadatas"][0])
    assert set(got["metadatas"][0]) == {"m", "updated_at"}  # one key Chroma filters on, one text
    assert got["documents"] == ["Migrations live in db/migrations"]
    assert meta["type"] == "fact" and meta["project_id"] == "alpha" and meta["session_id"] == "s1"
    assert (meta["run_id"], meta["step_id"], meta["attempt"]) == ("r1", "step-1", 1)
    assert meta["rationale"] == "seen in repo"
    assert None not in meta.values()
    assert [r.id for r in manager.recall(session, "where are the database migrations?")] == [
        record.id
    ]


def test_tool_returns_formatted_success(
    manager: MemoryManager, session: SessionContext, memory_tools: Any
) -> None:
    remember = memory_tools(manager, session)[0]
    result = json.loads(remember.invoke({"content": "Prefer dataclasses", "type": "decision"}))
    assert set(result) == {"remembered", "memory_id", "memory_type", "message"}
    assert result["remembered"] is True and result["memory_type"] == "decision"
    assert result["message"] == f"Stored decision memory with id {result['memory_id']}"


def test_missing_session_is_a_clear_error(manager: MemoryManager, memory_tools: Any) -> None:
    with pytest.raises(MissingSessionError, match="memory.remember needs a session context"):
        manager.remember(None, "orphan")  # type: ignore[arg-type]
    remember = memory_tools(manager, None)[0]
    with pytest.raises(MissingSessionError, match="needs a session context"):
        remember.invoke({"content": "orphan"})


def test_optional_rationale(manager: MemoryManager, session: SessionContext) -> None:
    without = manager.remember(session, "no reason given")
    with_reason = manager.remember(session, "reason given", rationale="the tests failed without it")
    assert manager.get(session, without.id).rationale is None
    assert manager.get(session, with_reason.id).rationale == "the tests failed without it"


def test_remember_emits_telemetry(manager: MemoryManager, session: SessionContext, events) -> None:  # type: ignore[no-untyped-def]
    record = manager.remember(session, "telemetry check", type="risk")
    (fields,) = events.named("memory.remember")
    assert fields["session_id"] == "s1" and fields["project_id"] == "alpha"
    assert fields["memory_id"] == record.id and fields["memory_type"] == "risk"
    assert isinstance(fields["duration_ms"], float)


class _GatedCollection:
    """A collection whose first upsert waits for `gate` (and may fail), counting upserts."""

    def __init__(self, real: object, *, fail: bool = False) -> None:
        self.real, self.fail = real, fail
        self.gate = threading.Event()
        self.sizes: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def upsert(self, **kwargs: object) -> object:
        self.sizes.append(len(kwargs["ids"]))  # type: ignore[arg-type]
        if len(self.sizes) == 1:
            self.gate.wait(30)
            if self.fail:
                raise RuntimeError("disk full")
        return self.real.upsert(**kwargs)  # type: ignore[attr-defined]


def _remember_concurrently(
    manager: MemoryManager, session: SessionContext, gated: _GatedCollection, n: int
) -> tuple[list[str], list[BaseException]]:
    sync = manager._sync(session.project_id)
    ids: list[str] = []
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            ids.append(manager.remember(session, f"concurrent lesson number {i}").id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while not (gated.sizes and len(sync._queue) == n - 1) and time.monotonic() < deadline:
        time.sleep(0.01)  # the first write is in flight, the others wait in the queue
    gated.gate.set()
    for t in threads:
        t.join(30)
    return ids, errors


def test_concurrent_remembers_share_one_upsert(
    manager: MemoryManager, session: SessionContext
) -> None:
    manager.remember(session, "warm up the project")
    sync = manager._sync(session.project_id)
    gated = _GatedCollection(sync.collection)
    sync.collection = gated

    ids, errors = _remember_concurrently(manager, session, gated, 8)

    assert errors == []
    assert gated.sizes == [1, 7]  # group commit: the 7 that waited went out together
    assert {manager.get(session, i).content for i in ids} == {
        f"concurrent lesson number {i}" for i in range(8)
    }


def test_a_failed_group_write_fails_every_caller_in_it_and_the_next_write_works(
    manager: MemoryManager, session: SessionContext
) -> None:
    manager.remember(session, "warm up the project")
    sync = manager._sync(session.project_id)
    gated = _GatedCollection(sync.collection, fail=True)
    sync.collection = gated

    ids, errors = _remember_concurrently(manager, session, gated, 4)

    assert len(errors) == 1 and len(ids) == 3  # the first write failed; the queued 3 did not
    assert isinstance(errors[0], RuntimeError)
    sync.collection = gated.real
    later = manager.remember(session, "written after the failure")
    assert manager.get(session, later.id).content == "written after the failure"
    assert len(manager.recall(session, None, limit=50)) == 5
