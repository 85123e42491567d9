"""Earned confidence (reinforce/contradict), expiry, working memory, export/import."""

from __future__ import annotations

import time
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from atom_agent.errors import MemoryNotFoundError, MemoryValidationError
from atom_agent.memory import MemoryManager, MemoryType, WorkingMemory
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.embeddings import MiniLMInt8EmbeddingFunction
from atom_agent.memory.records import unpack_metadata
from atom_agent.memory.store import collection_name
from atom_agent.session import SessionContext


def test_reinforce_and_contradict(manager: MemoryManager, session: SessionContext, events) -> None:  # type: ignore[no-untyped-def]
    record = manager.remember(session, "The fixture `db` needs Docker", confidence=0.6)
    up = MemoryChanges(session)
    up.reinforce(record.id, evidence="tests passed")
    assert manager.apply(up).records[record.id].confidence == pytest.approx(0.64)
    down = MemoryChanges(session)
    down.contradict(record.id, amount=0.5, evidence="test_db failed without Docker")
    assert manager.apply(down).records[record.id].confidence == pytest.approx(0.32)
    assert manager.get(session, record.id).confidence == pytest.approx(0.32)
    assert record.id not in {r.id for r in manager.recall(session)}  # below the 0.5 floor now
    assert [e["memory_id"] for e in events.named("memory.reinforce")] == [record.id]
    assert [e["memory_id"] for e in events.named("memory.contradict")] == [record.id]


def test_expired_records_are_never_returned_and_are_swept(
    manager: MemoryManager, session: SessionContext
) -> None:
    # Seconds of margin: a busy machine takes a while to embed and recall.
    short = manager.remember(session, "A temporary token is abc123", ttl_s=4.0)
    keep = manager.remember(session, "A permanent fact")
    assert short.expires_at is not None
    assert short.id in {r.id for r in manager.recall(session)}
    time.sleep(4.1)
    assert [r.id for r in manager.recall(session)] == [keep.id]
    with pytest.raises(MemoryNotFoundError):
        manager.get(session, short.id)
    assert list(manager.get_many(session, [short.id, keep.id])) == [keep.id]
    assert short.id not in {r["id"] for r in manager.export(session)}
    assert manager.sweep_expired(session) == 1
    assert manager.sweep_expired(session) == 0
    assert manager.backend.client.get_collection(manager._sync("alpha").name).count() == 1


@pytest.mark.parametrize("ttl", [0, -5, "1h"])
def test_bad_ttl(manager: MemoryManager, session: SessionContext, ttl: object) -> None:
    with pytest.raises(MemoryValidationError, match="ttl_s must be a positive number"):
        manager.remember(session, "x", ttl_s=ttl)  # type: ignore[arg-type]


def test_working_memory_merges_candidates(session: SessionContext) -> None:
    working = WorkingMemory(session)
    working.note("test_parse fails: KeyError 'date' in the fixture", importance=0.5)
    twice = working.note("test_parse  fails: KeyError 'date' in the FIXTURE", importance=0.5)
    assert twice.occurrences == 2 and twice.importance == pytest.approx(0.75)
    working.note("Line length limit is 100", type="convention", importance=0.2)
    assert [c.content for c in working.candidates()] == [
        "test_parse fails: KeyError 'date' in the fixture",
        "Line length limit is 100",
    ]
    assert [c.type for c in working.above(0.7)] == [MemoryType.LESSON_LEARNED]


def test_agent_remember_bypasses_the_threshold(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "explicit agent memory", importance=0.0)
    assert manager.get(session, record.id).importance == 0.0  # stored at once, whatever its score


def test_export_import_round_trip(manager: MemoryManager, session: SessionContext) -> None:
    old = manager.remember(session, "Python 3.8", type="decision", rationale="legacy servers")
    new = manager.remember(session, "Python 3.11", type="decision")
    manager.forget(session, old.id, reason="upgraded", replacement_id=new.id)
    manager.recall(session, "python version")
    exported = manager.export(session)
    target = SessionContext(session_id="s3", project_id="gamma")
    assert manager.import_(target, exported) == 2
    copies = {r["id"]: r for r in manager.export(target)}
    assert set(copies) == {old.id, new.id}
    assert (
        copies[old.id]["superseded_by"] == new.id
        and copies[old.id]["supersede_reason"] == "upgraded"
    )
    assert (
        copies[old.id]["rationale"] == "legacy servers" and copies[old.id]["project_id"] == "gamma"
    )
    assert copies[new.id]["access_count"] == 1
    assert (
        copies[old.id]["created_at"] == next(r for r in exported if r["id"] == old.id)["created_at"]
    )
    assert [r.id for r in manager.recall(target, "python version")] == [new.id]
    assert [r.id for r in manager.history(target, new.id)] == [old.id, new.id]


def test_import_validates_every_record_first(
    manager: MemoryManager, session: SessionContext
) -> None:
    with pytest.raises(MemoryValidationError, match="record 1: content must be a non-empty string"):
        manager.import_(session, [{"content": "fine"}, {"content": ""}])
    assert manager.export(session) == []


def test_reopen_sees_everything(tmp_path, session: SessionContext) -> None:  # type: ignore[no-untyped-def]
    with MemoryManager.open(tmp_path) as first:
        record = first.remember(session, "persisted across opens")
        first.recall(session)
    with MemoryManager.open(tmp_path) as second:
        again = second.get(session, record.id)
        assert again.content == "persisted across opens" and again.access_count == 1
        assert [r.id for r in second.recall(session, "persisted")] == [record.id]


def test_a_store_made_before_the_cheap_hnsw_settings_still_opens(
    tmp_path: Path, session: SessionContext
) -> None:
    # Collections made before issue 3 carry Chroma's default HNSW settings; new ones build a
    # cheaper graph (nothing queries it). Both must open and behave the same.
    old = chromadb.PersistentClient(
        str(tmp_path / "memory"), settings=Settings(anonymized_telemetry=False)
    )
    old.create_collection(
        collection_name("memory", session.project_id),
        embedding_function=MiniLMInt8EmbeddingFunction(),
        metadata={"project_id": session.project_id, "kind": "memory", "hnsw:space": "cosine"},
    )
    with MemoryManager.open(tmp_path) as memory:
        record = memory.remember(session, "The parser rejects tabs")
        assert [r.id for r in memory.recall(session, "does the parser accept tabs?")] == [record.id]
        reopened = memory.backend.collection("memory", session.project_id)
        assert reopened.configuration_json["hnsw"]["ef_construction"] == 100  # kept as made
        fresh = memory.backend.collection("memory", "another-project")
        assert fresh.configuration_json["hnsw"]["ef_construction"] < 100


def test_records_stored_one_key_per_field_are_read_and_changed_as_before(
    tmp_path: Path, session: SessionContext
) -> None:
    # Stores written before the packed metadata (one Chroma key per field) keep working: read
    # from Chroma, recalled, changed; a changed record is rewritten packed.
    with MemoryManager.open(tmp_path) as memory:
        kept = memory.remember(session, "The parser rejects tabs", confidence=0.6)
        other = memory.remember(session, "Config lives in conf/", type="convention")
        collection = memory.backend.collection("memory", session.project_id)
        got = collection.get(include=["documents", "metadatas", "embeddings"])
        flat = [unpack_metadata(m) for m in got["metadatas"]]
        assert all("m" not in m and "type" in m for m in flat)
        collection.delete(ids=got["ids"])  # no packed key may linger
        collection.add(
            ids=got["ids"], documents=got["documents"], metadatas=flat,
            embeddings=got["embeddings"],
        )  # fmt: skip
        name = memory._sync(session.project_id).name
        memory.backend.bump_token(name)
        snapshot = memory.backend.snapshot_path(name)
    if snapshot is not None:  # the mirror is loaded from Chroma, not from the snapshot
        snapshot.unlink(missing_ok=True)
    with MemoryManager.open(tmp_path) as memory:
        assert memory.get(session, kept.id).confidence == 0.6
        assert [r.id for r in memory.recall(session, "does the parser accept tabs?")][0] == kept.id
        changes = MemoryChanges(session)
        changes.reinforce(kept.id, amount=0.5)
        memory.apply(changes)
        memory.forget(session, other.id, reason="moved")  # closing writes the access counts
    with MemoryManager.open(tmp_path) as memory:
        again = memory.get(session, kept.id)
        assert again.confidence == 0.8 and again.access_count >= 1
        assert memory.get(session, other.id).superseded
        stored = memory.backend.collection("memory", session.project_id).get(ids=[kept.id])
        assert "m" in stored["metadatas"][0]  # rewritten packed
