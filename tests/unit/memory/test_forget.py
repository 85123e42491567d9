"""Seed 004 §4.3.3: forget (soft delete, supersession chains)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atom_agent.errors import MemoryNotFoundError, MemoryValidationError, MissingSessionError
from atom_agent.memory import MemoryManager
from atom_agent.memory.records import unpack_metadata
from atom_agent.memory.store import collection_name
from atom_agent.session import SessionContext


def test_forget_marks_superseded(manager: MemoryManager, session: SessionContext) -> None:
    record = manager.remember(session, "The API uses XML")
    forgotten = manager.forget(session, record.id)
    assert forgotten.superseded and forgotten.superseded_at is not None
    assert forgotten.superseded_by is None
    stored = manager.backend.client.get_collection(collection_name("memory", "alpha")).get(
        ids=[record.id]
    )["metadatas"][0]
    meta = unpack_metadata(stored)
    assert meta["superseded"] is True and "superseded_by" not in meta


def test_replacement_creates_chain(manager: MemoryManager, session: SessionContext) -> None:
    v1 = manager.remember(session, "The API uses XML")
    v2 = manager.remember(session, "The API uses JSON")
    v3 = manager.remember(session, "The API uses JSON over HTTP/2")
    manager.forget(session, v1.id, reason="migrated", replacement_id=v2.id)
    manager.forget(session, v2.id, replacement_id=v3.id)
    assert manager.get(session, v1.id).superseded_by == v2.id
    assert [r.id for r in manager.history(session, v2.id)] == [v1.id, v2.id, v3.id]
    assert [r.id for r in manager.history(session, v1.id)] == [v1.id, v2.id, v3.id]
    assert [r.id for r in manager.history(session, v3.id)] == [v1.id, v2.id, v3.id]


def test_nonexistent_memory_is_a_clear_error(
    manager: MemoryManager, session: SessionContext
) -> None:
    with pytest.raises(MemoryNotFoundError, match="memory 'nope' not found in this project"):
        manager.forget(session, "nope")


def test_nonexistent_replacement_is_a_clear_error(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "kept")
    with pytest.raises(MemoryNotFoundError, match="replacement memory 'ghost' not found"):
        manager.forget(session, record.id, replacement_id="ghost")
    assert not manager.get(session, record.id).superseded  # nothing written


def test_replacement_must_differ(manager: MemoryManager, session: SessionContext) -> None:
    record = manager.remember(session, "self")
    with pytest.raises(MemoryValidationError, match="replacement_id must differ from memory_id"):
        manager.forget(session, record.id, replacement_id=record.id)


def test_empty_memory_id(manager: MemoryManager, session: SessionContext) -> None:
    with pytest.raises(MemoryValidationError, match="memory_id must be a non-empty string"):
        manager.forget(session, " ")


def test_reason_is_stored(manager: MemoryManager, session: SessionContext) -> None:
    record = manager.remember(session, "Python 3.8 is the target")
    manager.forget(session, record.id, reason="we moved to 3.11")
    assert manager.get(session, record.id).supersede_reason == "we moved to 3.11"


def test_tool_success_message(
    manager: MemoryManager, session: SessionContext, memory_tools: Any
) -> None:
    tools = {t.name: t for t in memory_tools(manager, session)}
    old = manager.remember(session, "old")
    new = manager.remember(session, "new")
    plain = json.loads(tools["forget"].invoke({"memory_id": new.id}))
    assert plain == {
        "forgotten": True,
        "memory_id": new.id,
        "message": f"Memory {new.id} has been superseded",
    }
    result = json.loads(
        tools["forget"].invoke({"memory_id": old.id, "reason": "stale", "replacement_id": new.id})
    )
    assert result == {
        "forgotten": True,
        "memory_id": old.id,
        "message": f"Memory {old.id} has been superseded by {new.id}",
        "reason": "stale",
    }


def test_missing_session(manager: MemoryManager) -> None:
    with pytest.raises(MissingSessionError, match="memory.forget needs a session context"):
        manager.forget(None, "x")  # type: ignore[arg-type]


def test_forgotten_excluded_from_recall_but_kept(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "The build uses Makefiles")
    manager.forget(session, record.id)
    assert record.id not in {r.id for r in manager.recall(session, "build system")}
    assert manager.recall(session) == []
    with_superseded = manager.recall(session, "build system", include_superseded=True)
    assert [r.id for r in with_superseded] == [record.id] and with_superseded[0].superseded
    assert manager.get(session, record.id).content == "The build uses Makefiles"  # provenance


def test_forget_emits_telemetry(manager: MemoryManager, session: SessionContext, events) -> None:  # type: ignore[no-untyped-def]
    record = manager.remember(session, "to forget")
    manager.forget(session, record.id, reason="obsolete")
    (fields,) = events.named("memory.forget")
    assert fields["memory_id"] == record.id and fields["reason"] == "obsolete"
    assert fields["session_id"] == "s1" and fields["project_id"] == "alpha"
