"""MemoryChanges / MemoryManager.apply: several writes in one Chroma write, idempotent and exact."""

from __future__ import annotations

import json
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
    assert again.id == first.id and again.content == "first wording"
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


def test_changes_kept_as_data_apply_as_the_originals_would(
    manager: MemoryManager, session: SessionContext
) -> None:
    old = manager.remember(session, "slugify(s) lowercases", type="fact")
    used = manager.remember(session, "Slugs use hyphens", type="convention", confidence=0.5)
    first = MemoryChanges(session)
    new = first.remember({"content": "slugify(s) lowercases and hyphenates", "id": "k" + "2" * 31})
    first.reinforce(used.id, amount=0.5, evidence="its tests passed")
    second = MemoryChanges(session)
    later = second.remember({"content": "slugify(s, sep) joins with sep", "type": "fact"})
    second.forget(new.id, reason="a later commit", replacement_id=later.id)  # added before
    second.forget(old.id, replacement_id=later.id)
    second.contradict(used.id, amount=0.5)
    # Through JSON, as a checkpoint keeps them, then merged in order.
    data = json.loads(json.dumps([first.to_data(), second.to_data()]))
    merged = MemoryChanges.from_data(session, data)
    applied = manager.apply(merged)
    assert sorted(applied.stored) == sorted([new.id, later.id]) and applied.missing == []
    assert manager.get(session, new.id).superseded_by == later.id
    assert manager.get(session, old.id).superseded_by == later.id
    assert manager.get(session, used.id).confidence == pytest.approx((0.5 + 0.5 * 0.5) * 0.5)
    assert manager.get(session, later.id).created_at == later.created_at  # when it was learned


def test_a_record_kept_by_once_can_still_be_changed_in_the_same_set(
    manager: MemoryManager, session: SessionContext
) -> None:
    stored = remember_once(manager, session, "interface", {"content": "f(x) doubles x"})
    changes = MemoryChanges(session)
    again = changes.remember({"content": "f(x) doubles x", "id": stored.id}, once=True)
    replacement = changes.remember({"content": "f(x, n) multiplies x by n"})
    changes.forget(again.id, replacement_id=replacement.id)
    applied = manager.apply(changes)
    assert applied.missing == [] and applied.changed == [stored.id]
    assert manager.get(session, stored.id).superseded_by == replacement.id


@pytest.mark.parametrize(
    "data",
    [
        [{"records": [], "once": []}],  # no changes key
        [{"records": [{"content": "x"}], "once": [], "changes": []}],  # a record without fields
        [{"records": [], "once": [], "changes": [{"memory_id": "k1", "kind": "delete",
                                                  "params": {}}]}],
        [{"records": [], "once": [""], "changes": []}],  # an empty id
        ["not a mapping"],
    ],
)  # fmt: skip
def test_data_that_is_not_a_change_set_is_a_clear_error(
    session: SessionContext, data: list[Any]
) -> None:
    with pytest.raises(MemoryValidationError):
        MemoryChanges.from_data(session, data)


def test_a_change_rewrites_a_record_with_its_own_vector_read_from_its_metadata(
    manager: MemoryManager, session: SessionContext
) -> None:
    import numpy as np

    from atom_agent.memory.records import pack_metadata, unpack_metadata

    kept = manager.remember(session, "The deploy script lives in ops/deploy.sh", type="fact")
    bare = manager.remember(session, "Tests run with pytest -q", type="convention")
    sync = manager._sync(session.project_id)
    # A record whose metadata carries no vector (written before vectors travelled in it):
    # its vector comes from Chroma's embeddings instead.
    got = sync.collection.get(ids=[bare.id], include=["documents", "metadatas", "embeddings"])
    meta = unpack_metadata(got["metadatas"][0])
    meta.pop("vec")
    sync.collection.upsert(
        ids=[bare.id],
        documents=got["documents"],
        metadatas=[pack_metadata(meta)],
        embeddings=got["embeddings"],
    )

    def vectors() -> dict[str, Any]:
        got = sync.collection.get(ids=[kept.id, bare.id], include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"], strict=True))

    before = vectors()
    reads: list[list[str]] = []
    original_get = sync.collection.get

    def get(*args: Any, **kwargs: Any) -> Any:
        reads.append(list(kwargs.get("include") or []))
        return original_get(*args, **kwargs)

    sync.collection.get = get  # type: ignore[method-assign]
    changes = MemoryChanges(session)
    changes.reinforce(kept.id, evidence="used")
    changes.reinforce(bare.id, evidence="used")
    assert sorted(manager.apply(changes).changed) == sorted([kept.id, bare.id])
    # Chroma's embeddings are read for the record without a vector only.
    assert ["embeddings"] in reads and all(
        "embeddings" not in r for r in reads if r != ["embeddings"]
    )
    sync.collection.get = original_get  # type: ignore[method-assign]
    after = vectors()
    assert np.allclose(after[kept.id], before[kept.id], atol=2e-3)  # the metadata's float16 one
    assert np.allclose(after[bare.id], before[bare.id])
    assert manager.get(session, bare.id).confidence > 0.8
