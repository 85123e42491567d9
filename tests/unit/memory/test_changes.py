"""MemoryChanges / MemoryManager.apply: several writes in one Chroma write, idempotent and exact."""

from __future__ import annotations

from typing import Any

import pytest

from atom_agent.errors import MemoryValidationError
from atom_agent.memory import MemoryManager
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.idempotent import remember_once
from atom_agent.session import SessionContext


class _Counting:
    """Counts the write calls (each a Chroma commit) made on a collection."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.collection, name)
        if name in ("add", "upsert", "update", "delete"):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.writes.append(name)
                return attr(*args, **kwargs)

            return counted
        return attr


def _count_writes(manager: MemoryManager, session: SessionContext) -> _Counting:
    sync = manager._sync(session.project_id)
    counting = _Counting(sync.collection)
    sync.collection = counting
    return counting


def test_a_commit_s_lessons_are_one_chroma_write(
    manager: MemoryManager, session: SessionContext
) -> None:
    old = manager.remember(session, "parse_config(path) reads YAML", type="fact")
    used = manager.remember(session, "Config files live in conf/", type="convention")
    manager.recall(session, "config files")  # leaves access counts pending
    writes = _count_writes(manager, session)
    changes = MemoryChanges(session)
    new = changes.remember({"content": "parse_config(path, strict) reads YAML", "type": "fact"})
    changes.forget(old.id, reason="a later commit", replacement_id=new.id)
    changes.reinforce(used.id, evidence="its tests passed")
    applied = manager.apply(changes)
    assert writes.writes == ["upsert"]  # one commit: new record, supersession, confidence, counts
    assert applied.stored == [new.id] and sorted(applied.changed) == sorted([old.id, used.id])
    assert applied.missing == []
    assert manager.get(session, old.id).superseded_by == new.id
    assert manager.get(session, used.id).confidence == pytest.approx(0.8 + 0.1 * 0.2)
    assert manager.get(session, used.id).access_count >= 1  # the pending count was written too
    found = [r.id for r in manager.recall(session, "parse_config reads YAML", min_confidence=0)]
    assert new.id in found and old.id not in found  # the mirror saw every change


def test_changes_to_records_that_are_gone_change_nothing_else_applies(
    manager: MemoryManager, session: SessionContext, other: SessionContext
) -> None:
    theirs = manager.remember(other, "another project's memory")
    mine = manager.remember(session, "a memory of this project")
    changes = MemoryChanges(session)
    changes.reinforce(theirs.id)
    changes.contradict("k" + "0" * 31)
    changes.contradict(mine.id, amount=0.5)
    changes.forget(mine.id, replacement_id="k" + "1" * 31)  # the replacement does not exist
    applied = manager.apply(changes)
    assert applied.missing == [theirs.id, "k" + "0" * 31, "k" + "1" * 31]
    assert applied.changed == [mine.id]
    assert manager.get(other, theirs.id).confidence == theirs.confidence
    assert manager.get(session, mine.id).confidence == pytest.approx(0.4)
    assert not manager.get(session, mine.id).superseded


def test_once_keeps_what_was_stored_under_its_id(
    manager: MemoryManager, session: SessionContext
) -> None:
    first = remember_once(manager, session, "lesson", {"content": "first wording"})
    again = remember_once(manager, session, "lesson", {"content": "second wording"})
    assert first.new and not again.new
    assert again.record.id == first.record.id and again.record.content == "first wording"
    assert [r.content for r in manager.recall(session, "wording")] == ["first wording"]


def test_a_bad_change_raises_when_added_and_nothing_is_written(
    manager: MemoryManager, session: SessionContext
) -> None:
    changes = MemoryChanges(session)
    changes.remember({"content": "a good one"})
    with pytest.raises(MemoryValidationError):
        changes.remember({"content": "   "})
    with pytest.raises(MemoryValidationError):
        changes.reinforce("some-id", amount=2.0)
    with pytest.raises(MemoryValidationError):
        changes.forget("same", replacement_id="same")
    with pytest.raises(MemoryValidationError):
        changes.remember({"content": "no id"}, once=True)
    assert manager.recall(session, "good") == []  # nothing is written until apply


def test_an_empty_change_set_writes_nothing(
    manager: MemoryManager, session: SessionContext
) -> None:
    writes = _count_writes(manager, session)
    applied = manager.apply(MemoryChanges(session))
    assert not MemoryChanges(session)
    assert writes.writes == [] and applied.stored == [] and applied.changed == []
