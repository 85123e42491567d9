"""Projects are isolated: no id or filter a caller passes reaches another project."""

from __future__ import annotations

import pytest

from atom_agent.errors import MemoryNotFoundError
from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext


@pytest.fixture
def secret(manager: MemoryManager, other: SessionContext) -> str:
    return manager.remember(other, "The beta project's deploy key lives in vault path kv/beta").id


def test_id_from_another_project_is_not_found(
    manager: MemoryManager, session: SessionContext, secret: str
) -> None:
    with pytest.raises(MemoryNotFoundError, match="not found in this project"):
        manager.get(session, secret)
    with pytest.raises(MemoryNotFoundError):
        manager.history(session, secret)
    with pytest.raises(MemoryNotFoundError):
        manager.forget(session, secret)


def test_cannot_link_to_another_projects_memory(
    manager: MemoryManager, session: SessionContext, secret: str
) -> None:
    mine = manager.remember(session, "alpha memory")
    with pytest.raises(MemoryNotFoundError, match="replacement memory"):
        manager.forget(session, mine.id, replacement_id=secret)


def test_nothing_changes_across_projects(
    manager: MemoryManager, session: SessionContext, other: SessionContext, secret: str
) -> None:
    assert manager.recall(session, "deploy key vault", min_confidence=0.0) == []
    before = manager.get(other, secret)
    assert before.access_count == 0 and not before.superseded and before.confidence == 0.8


def test_recall_and_export_see_only_their_project(
    manager: MemoryManager, session: SessionContext, other: SessionContext, secret: str
) -> None:
    manager.remember(session, "alpha uses a deploy key too")
    assert all(
        r.project_id == "alpha"
        for r in manager.recall(session, "deploy key vault", min_confidence=0.0)
    )
    assert secret not in {
        r.id for r in manager.recall(session, "deploy key vault", min_confidence=0.0)
    }
    assert [r["id"] for r in manager.export(other)] == [secret]
    assert all(r["project_id"] == "alpha" for r in manager.export(session))


def test_import_cannot_write_into_another_project(
    manager: MemoryManager, session: SessionContext, other: SessionContext, secret: str
) -> None:
    exported = manager.export(other)
    manager.import_(session, exported)  # same id, but it lands in alpha, owned by alpha
    assert manager.get(session, secret).project_id == "alpha"
    assert manager.get(other, secret).project_id == "beta"
    manager.forget(session, secret)
    assert not manager.get(other, secret).superseded


def test_sessions_of_one_project_share_memory(
    manager: MemoryManager, session: SessionContext
) -> None:
    record = manager.remember(session, "shared within the project")
    colleague = SessionContext(session_id="s9", project_id="alpha")
    assert manager.get(colleague, record.id).session_id == "s1"


def test_get_many_reads_only_this_projects_live_memories(
    manager: MemoryManager, session: SessionContext, secret: str
) -> None:
    mine = manager.remember(session, "alpha memory")
    found = manager.get_many(session, [mine.id, secret, "nope", mine.id])
    assert list(found) == [mine.id]
    assert found[mine.id].content == "alpha memory"
    assert manager.get_many(session, []) == {}
