"""The BaseStore adapter behaves like LangGraph's own InMemoryStore on the same operations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from atom_agent.memory.embeddings import Embedder
from atom_agent.memory.langgraph_store import ChromaStore, make_store


def _reference() -> InMemoryStore:
    embedder = Embedder.shared()
    return InMemoryStore(
        index={"dims": 384, "embed": lambda texts: embedder.embed(list(texts)).tolist()}
    )


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[BaseStore, BaseStore]]:
    ours = ChromaStore.open(tmp_path, project_id="alpha")
    theirs = _reference()
    for store in (ours, theirs):
        store.put(
            ("users", "u1", "prefs"), "theme", {"text": "likes dark mode in the editor", "n": 1}
        )
        store.put(("users", "u1", "prefs"), "indent", {"text": "prefers tabs over spaces", "n": 2})
        store.put(
            ("users", "u2"),
            "lang",
            {"text": "writes Rust", "n": 3, "tags": ["a", "b"]},
            index=False,
        )
        store.put(
            ("users", "u2"),
            "food",
            {"text": "enjoys pizza", "n": 4, "meta": {"x": 1}},
            index=["text"],
        )
        store.put(("docs",), "d1", {"text": "API documentation for the LRU cache", "n": 5})
    yield ours, theirs


def _view(items: list) -> list[tuple[tuple[str, ...], str, dict]]:  # type: ignore[type-arg]
    return [(tuple(i.namespace), i.key, i.value) for i in items]


def test_get_and_missing(stores: tuple[BaseStore, BaseStore]) -> None:
    for store in stores:
        item = store.get(("users", "u1", "prefs"), "theme")
        assert item is not None and item.value == {"text": "likes dark mode in the editor", "n": 1}
        assert item.namespace == ("users", "u1", "prefs") and item.key == "theme"
        assert store.get(("users", "u1", "prefs"), "nope") is None
        assert store.get(("users",), "theme") is None


@pytest.mark.parametrize(
    ("prefix", "kwargs"),
    [
        (("users",), {}),
        ((), {}),
        (("users", "u2"), {}),
        (("users",), {"filter": {"n": {"$gte": 2}}}),
        (("users",), {"filter": {"n": 1}}),
        (("users",), {"filter": {"tags": ["a", "b"]}}),
        (("users",), {"filter": {"meta": {"x": 1}}}),
        (("users",), {"filter": {"n": {"$ne": 2}}, "limit": 2}),
        (("nothing",), {}),
    ],
)
def test_search_without_query_matches(
    stores: tuple[BaseStore, BaseStore], prefix: tuple[str, ...], kwargs: dict
) -> None:  # type: ignore[type-arg]
    ours, theirs = stores
    assert sorted(_view(ours.search(prefix, **kwargs)), key=str) == sorted(
        _view(theirs.search(prefix, **kwargs)), key=str
    )


@pytest.mark.parametrize("query", ["editor color scheme", "what food do they like", "cache docs"])
def test_semantic_search_ranks_like_the_reference(
    stores: tuple[BaseStore, BaseStore], query: str
) -> None:
    ours, theirs = stores
    for prefix in [(), ("users",)]:
        a, b = (
            ours.search(prefix, query=query, limit=10),
            theirs.search(prefix, query=query, limit=10),
        )
        assert [(i.namespace, i.key) for i in a] == [(i.namespace, i.key) for i in b]
        for x, y in zip(a, b, strict=True):
            assert (x.score is None) == (y.score is None)
            if x.score is not None:
                assert x.score == pytest.approx(y.score, abs=5e-3)  # float16 storage
    top = ours.search((), query="editor color scheme", limit=1)
    assert [i.key for i in top] == ["theme"]
    page = ours.search((), query="editor color scheme", limit=2, offset=1)
    assert [i.key for i in page] == [
        i.key for i in theirs.search((), query="editor color scheme", limit=2, offset=1)
    ]


def test_list_namespaces(stores: tuple[BaseStore, BaseStore]) -> None:
    ours, theirs = stores
    for kwargs in [
        {},
        {"max_depth": 1},
        {"prefix": ("users",)},
        {"suffix": ("prefs",)},
        {"prefix": ("users", "*")},
        {"limit": 1, "offset": 1},
        {"max_depth": 2, "prefix": ("users",)},
    ]:
        assert ours.list_namespaces(**kwargs) == theirs.list_namespaces(**kwargs), kwargs  # type: ignore[arg-type]


def test_update_and_delete(stores: tuple[BaseStore, BaseStore]) -> None:
    for store in stores:
        store.put(("docs",), "d1", {"text": "rewritten", "n": 6})
        item = store.get(("docs",), "d1")
        assert item is not None and item.value == {"text": "rewritten", "n": 6}
        assert item.updated_at >= item.created_at
        store.delete(("docs",), "d1")
        assert store.get(("docs",), "d1") is None
        assert store.search(("docs",)) == []
        store.delete(("docs",), "never-existed")
    # Like LangGraph's Postgres store (unlike InMemoryStore's defaultdict), an emptied
    # namespace is no longer listed.
    assert ("docs",) not in stores[0].list_namespaces()


def test_batch_reads_see_the_state_before_its_puts(stores: tuple[BaseStore, BaseStore]) -> None:
    ours, theirs = stores
    ops = [
        PutOp(("batch",), "k", {"v": 1}),
        GetOp(("batch",), "k"),
        PutOp(("batch",), "k", {"v": 2}),
        SearchOp(("batch",)),
    ]
    assert ours.batch(ops) == theirs.batch(ops) == [None, None, None, []]
    for store in stores:
        item = store.get(("batch",), "k")
        assert item is not None and item.value == {"v": 2}


def test_async_api(stores: tuple[BaseStore, BaseStore]) -> None:
    ours, _ = stores

    async def go() -> None:
        await ours.aput(("async",), "k", {"text": "asynchronous write"})
        item = await ours.aget(("async",), "k")
        assert item is not None and item.value == {"text": "asynchronous write"}
        found = await ours.asearch(("async",), query="async")
        assert [i.key for i in found] == ["k"] and found[0].score is not None

    asyncio.run(go())


def test_invalid_namespaces_are_rejected(stores: tuple[BaseStore, BaseStore]) -> None:
    ours, _ = stores
    with pytest.raises(InvalidNamespaceError):
        ours.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        ours.batch([GetOp(("",), "k")])


def test_projects_are_separate_and_persistent(tmp_path: Path) -> None:
    ChromaStore.open(tmp_path, project_id="alpha").put(("ns",), "k", {"v": "alpha"})
    assert ChromaStore.open(tmp_path, project_id="beta").get(("ns",), "k") is None
    again = ChromaStore.open(tmp_path, project_id="alpha").get(("ns",), "k")
    assert again is not None and again.value == {"v": "alpha"}


def test_make_store_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOM_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("ATOM_PROJECT_ID", "env-project")
    store = make_store()
    assert isinstance(store, BaseStore) and store.project_id == "env-project"
    assert store.backend.path == tmp_path / "memory"
