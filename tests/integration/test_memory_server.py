"""A real `chroma run` server shared by several managers (workers), and the Store adapter on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.servers import chroma_server, free_port

from atom_agent.errors import ConfigError, MemoryNotFoundError, MemoryStoreError
from atom_agent.memory import MemoryManager
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.langgraph_store import ChromaStore
from atom_agent.session import SessionContext

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with chroma_server(tmp_path_factory.mktemp("chroma-server")) as url:
        yield url


def test_server_round_trip_between_two_workers(tmp_path: Path, chroma_url: str) -> None:
    alice = SessionContext(session_id="worker-a", project_id="srv")
    bob = SessionContext(session_id="worker-b", project_id="srv")
    with (
        MemoryManager.open(tmp_path / "a", chroma_url=chroma_url) as a,
        MemoryManager.open(tmp_path / "b", chroma_url=chroma_url) as b,
    ):
        assert a.backend.url == chroma_url and not (tmp_path / "a" / "memory").exists()
        assert b.recall(bob) == []  # b's mirror is loaded (empty) before a writes
        old = a.remember(alice, "The API gateway rejects payloads over 1 MB", type="discovery")
        new = a.remember(
            alice, "The API gateway rejects payloads over 4 MB since v2", type="discovery"
        )
        a.forget(alice, old.id, reason="limit raised", replacement_id=new.id)
        found = b.recall(bob, "maximum request body size")  # sees a's writes at once
        assert [r.id for r in found] == [new.id]
        assert [r.id for r in b.history(bob, new.id)] == [old.id, new.id]
        assert b.get(bob, old.id).supersede_reason == "limit raised"
        changes = MemoryChanges(bob)
        changes.reinforce(new.id)
        b.apply(changes)
        assert a.get(alice, new.id).confidence == pytest.approx(0.82)
        with pytest.raises(MemoryNotFoundError):
            b.get(SessionContext(session_id="x", project_id="other"), new.id)


def test_environment_variable_selects_the_server(
    tmp_path: Path, chroma_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CHROMA_URL", chroma_url)
    with MemoryManager.open(tmp_path) as memory:
        assert memory.backend.url == chroma_url
        session = SessionContext(session_id="s", project_id="env")
        record = memory.remember(session, "configured by environment")
        assert memory.get(session, record.id).content == "configured by environment"


def test_store_adapter_on_the_server(chroma_url: str, tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path, project_id="srv", chroma_url=chroma_url)
    store.put(("prefs", "u1"), "editor", {"text": "uses vim keybindings"})
    other = ChromaStore.open(tmp_path, project_id="srv", chroma_url=chroma_url)
    found = other.search(("prefs",), query="text editor shortcuts")
    assert [i.key for i in found] == ["editor"] and found[0].score is not None


def test_bad_urls_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not an http"):
        MemoryManager.open(tmp_path, chroma_url="ftp://example")
    with pytest.raises(MemoryStoreError, match="cannot reach the Chroma server"):
        MemoryManager.open(tmp_path, chroma_url=f"http://127.0.0.1:{free_port()}")
