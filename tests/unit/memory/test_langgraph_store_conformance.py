"""LangGraph's own store test scenarios, run against ChromaStore.

Ported (the scenarios and their expectations, rewritten for this store) from langchain-ai/langgraph:
``libs/checkpoint-sqlite/tests/test_store.py`` (batch ops, get/put/delete, search with filters
and operators, namespace prefixes/suffixes/wildcards/max_depth/limit/offset, segment boundaries,
metacharacters, index fields, non-ASCII), ``libs/checkpoint-sqlite/tests/test_ttl.py`` (TTL:
default, per item, refresh on read, sweeping, omit_expired) and the matching cases of
``libs/checkpoint-postgres/tests/test_store.py``. Where those suites assert on their embedding
fake (character frequencies), the expectations here are the same relations under the real
MiniLM model. Each test gets its own ``PersistentClient(tmp_path)``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
    TTLConfig,
)

from atom_agent.memory.langgraph_store import ChromaStore


def _open(tmp_path: Path, ttl: TTLConfig | None = None, **kwargs: object) -> ChromaStore:
    return ChromaStore.open(tmp_path, project_id="conformance", ttl=ttl, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> ChromaStore:
    return _open(tmp_path)


# --- batch operations -----------------------------------------------------------------------------


def test_batch_mixes_operations_in_order(store: ChromaStore) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
        ]
    )
    assert len(results) == 5
    first = results[0]
    assert isinstance(first, Item) and first.value == {"data": "value1"}
    assert first.key == "key1" and first.namespace == ("test", "foo")
    assert results[1] is None
    assert [(i.key, i.value) for i in results[2]] == [("key1", {"data": "value1"})]  # type: ignore[union-attr]
    assert {("test", "foo"), ("test", "bar")} <= set(results[3])  # type: ignore[arg-type]
    assert results[4] is None

    again = store.batch(
        [
            SearchOp(("test",), limit=5),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(limit=5),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
        ]
    )
    assert len(again[0]) >= 2  # type: ignore[arg-type]
    assert isinstance(again[1], Item) and again[1].value == {"data": "value2"}
    assert again[3] is None
    assert isinstance(again[4], Item) and again[4].key == "key1"
    item3 = store.get(("test",), "key3")
    assert item3 is not None and item3.value == {"data": "value3"}


def test_batch_gets(store: ChromaStore) -> None:
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    got = store.batch([GetOp(("test",), "key1"), GetOp(("test",), "key2"), GetOp(("test",), "k3")])
    assert [r.key if isinstance(r, Item) else r for r in got] == ["key1", "key2", None]


def test_batch_puts_and_a_delete(store: ChromaStore) -> None:
    results = store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),
        ]
    )
    assert results == [None, None, None]
    one, two = store.get(("test",), "key1"), store.get(("test",), "key2")
    assert one is not None and one.value == {"data": "value1"}
    assert two is not None and two.value == {"data": "value2"}
    assert store.get(("test",), "key3") is None


def test_batch_searches(store: ChromaStore) -> None:
    for ns, key, value in [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        store.put(ns, key, value)
    tagged, two, foo = store.batch(
        [
            SearchOp(("test",), filter={"tag": "a"}, limit=10),
            SearchOp(("test",), limit=2),
            SearchOp(("test", "foo"), limit=10),
        ]
    )
    assert len(tagged) == 2 and all(i.value["tag"] == "a" for i in tagged)  # type: ignore[union-attr, arg-type]
    assert len(two) == 2  # type: ignore[arg-type]
    assert [i.namespace for i in foo] == [("test", "foo")]  # type: ignore[union-attr]


def test_batch_list_namespaces(store: ChromaStore) -> None:
    spaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("prod", "documents", "public"),
    ]
    for i, ns in enumerate(spaces):
        store.put(ns, f"k{i}", {"content": "x"})
    everything, shallow, public = store.batch(
        [
            ListNamespacesOp(limit=10),
            ListNamespacesOp(max_depth=2, limit=10),
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),), limit=10),
        ]
    )
    assert sorted(everything) == sorted(spaces)  # type: ignore[arg-type]
    assert all(len(ns) <= 2 for ns in shallow)  # type: ignore[union-attr]
    assert sorted(public) == sorted(ns for ns in spaces if ns[-1] == "public")  # type: ignore[arg-type]


# --- basic operations -----------------------------------------------------------------------------


def test_put_get_update_delete(store: ChromaStore) -> None:
    ns = ("test", "documents")
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(ns, "doc1")
    assert item is not None and item.namespace == ns and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    time.sleep(0.01)
    store.put(ns, "doc1", {"title": "Updated", "content": "Hello, Updated!"})
    updated = store.get(ns, "doc1")
    assert updated is not None and updated.value["title"] == "Updated"
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    assert store.get(("test", "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None


def test_store_lifecycle_in_one_namespace_tree(store: ChromaStore) -> None:
    uid = "u-4f1c"
    ns = (uid, "test", "documents")
    assert store.search((uid,)) == []
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    store.put(ns, "doc2", {"title": "Another Document", "content": "Greetings!"})
    assert {i.key for i in store.search((uid, "test"), limit=10)} == {"doc1", "doc2"}
    assert ns in store.list_namespaces(prefix=(uid, "test"))
    store.delete(ns, "doc1")
    store.delete(ns, "doc2")
    assert store.get(ns, "doc1") is None and store.get(ns, "doc2") is None
    assert store.search((uid, "test"), limit=10) == []
    assert store.list_namespaces(prefix=(uid,)) == []


# --- search ---------------------------------------------------------------------------------------


def test_search_by_namespace_filter_and_page(store: ChromaStore) -> None:
    for ns, key, value in [
        (("test", "docs"), "doc1", {"title": "First", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]:
        store.put(ns, key, value)
    assert len(store.search(("test",))) == 3
    docs = store.search(("test", "docs"))
    assert len(docs) == 2 and all(i.namespace == ("test", "docs") for i in docs)
    alice = store.search(("test",), filter={"author": "Alice"})
    assert sorted(i.key for i in alice) == ["doc1", "img1"]
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    drafts = store.search(("test",), filter={"tags": ["draft"]})
    assert [i.key for i in drafts] == ["doc2"]


def test_search_pages_are_disjoint(store: ChromaStore) -> None:
    base = "pages"
    for ns in [(base, "documents", "u1"), (base, "documents", "u2"), (base, "reports", "d1")]:
        store.put(ns, f"item_{ns[-1]}", {"author": "John Doe" if ns[-1] != "u2" else "Jane"})
    store.put((base, "reports", "d2"), "item_d2", {"author": "Alice"})
    first = {i.key for i in store.search((base,), limit=2, offset=0)}
    second = {i.key for i in store.search((base,), limit=2, offset=2)}
    assert len(first) == len(second) == 2 and first.isdisjoint(second)
    assert len(store.search((base, "reports"))) == 2
    assert len(store.search((base,), filter={"author": "John Doe"})) == 2


def test_filter_operators(store: ChromaStore) -> None:
    for key, price in [("item1", 10), ("item2", 20), ("item3", 30)]:
        store.put(("items",), key, {"price": price, "quantity": 40 - price})

    def keys(**kwargs: object) -> list[str]:
        return sorted(i.key for i in store.search(("items",), **kwargs))  # type: ignore[arg-type]

    assert keys(filter={"price": {"$gt": 15}}) == ["item2", "item3"]
    assert keys(filter={"price": {"$gte": 20}, "quantity": {"$lt": 20}}) == ["item3"]
    assert keys(filter={"price": {"$lte": 20}}) == ["item1", "item2"]
    assert keys(filter={"price": {"$ne": 20}}) == ["item1", "item3"]
    assert keys(filter={"price": {"$eq": 20}}) == ["item2"]
    assert keys(filter={"price": {"$lt": float("inf")}}) == ["item1", "item2", "item3"]
    assert keys(filter={"price": {"$gt": float("-inf")}}) == ["item1", "item2", "item3"]
    assert keys(filter={"price": {"$eq": float("nan")}}) == []
    assert keys(filter={"price": {"$lt": 10**100}}) == ["item1", "item2", "item3"]
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    assert keys(filter={"price": {"$lt": 0}}) == ["item4"]
    assert keys(filter={"missing": {"$gt": 0}}) == []
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search(("items",), filter={"price": {"$regex": ".*"}})


def test_filter_values_are_literal(store: ChromaStore) -> None:
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    for hostile in ["public' OR '1'='1", "public'; --", "public\x00' OR '1'='1", "''''"]:
        assert store.search(("docs",), filter={"access": hostile}) == []
    store.put(("docs",), "doc3", {"title": "O'Brien's Document", "access": "public"})
    assert [i.key for i in store.search(("docs",), filter={"title": "O'Brien's Document"})] == [
        "doc3"
    ]


def test_boolean_filters(store: ChromaStore) -> None:
    store.put(("flags",), "flag1", {"active": True})
    store.put(("flags",), "flag2", {"active": False})
    store.put(("flags",), "flag3", {"active": True})
    store.put(("flags",), "flag4", {"active": 1})
    assert sorted(i.key for i in store.search(("flags",), filter={"active": True})) == [
        "flag1",
        "flag3",
    ]
    assert [i.key for i in store.search(("flags",), filter={"active": False})] == ["flag2"]


def test_filter_keys_with_hyphens_digits_and_dots(store: ChromaStore) -> None:
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [i.key for i in store.search(("docs",), filter={"access-level": "public"})] == ["hyphen"]
    assert [i.key for i in store.search(("docs",), filter={"user.access-level": "nested"})] == [
        "hyphen"
    ]
    assert [i.key for i in store.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [i.key for i in store.search(("docs",), filter={"user.123abc": "ok2"})] == ["digit"]


def test_search_prefix_stops_at_label_boundaries(store: ChromaStore) -> None:
    for ns in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foo2",)]:
        store.put(ns, "k", {"v": 1})

    def spaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {i.namespace for i in store.search(prefix, limit=100)}

    assert spaces(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert spaces(("foobar",)) == {("foobar",)}
    assert spaces(("fo",)) == set()
    assert spaces(()) == {
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foo2",),
    }


def test_search_labels_are_literal_and_case_sensitive(store: ChromaStore) -> None:
    for ns in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",), ("star*",)]:
        store.put(ns, "k", {"v": 1})
    store.put(("Foo",), "k", {"v": "upper"})
    store.put(("foo",), "k", {"v": "lower"})

    def spaces(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {i.namespace for i in store.search(prefix, limit=100)}

    assert spaces(("user_1",)) == {("user_1",), ("user_1", "child")}
    assert spaces(("a%b",)) == {("a%b",)}
    assert spaces(("star*",)) == {("star*",)}
    assert spaces(("foo",)) == {("foo",)} and spaces(("Foo",)) == {("Foo",)}


# --- list_namespaces ------------------------------------------------------------------------------


def test_list_namespaces_conditions_depth_and_pages(store: ChromaStore) -> None:
    p = "7c1e"
    spaces = [
        (p, "test", "documents", "public", p),
        (p, "test", "documents", "private", p),
        (p, "test", "images", "public", p),
        (p, "test", "images", "private", p),
        (p, "prod", "documents", "public", p),
        (p, "prod", "documents", "some", "nesting", "public", p),
        (p, "prod", "documents", "private", p),
    ]
    for ns in spaces:
        store.put(ns, "dummy", {"content": "dummy"})
    found = store.list_namespaces(prefix=(p, "test"))
    assert len(found) == 4 and all(ns[1] == "test" for ns in found)
    assert len(store.list_namespaces(prefix=(p, "test", "documents"))) == 2
    public = store.list_namespaces(suffix=("public", p))
    assert len(public) == 4 and all(ns[-2] == "public" for ns in public)
    both = store.list_namespaces(prefix=(p, "test"), suffix=("public", p))
    assert len(both) == 2
    wild = store.list_namespaces(prefix=(p, "*", "documents"))
    assert len(wild) == 5 and all(ns[2] == "documents" for ns in wild)
    assert len(store.list_namespaces(suffix=("*", "public", p))) == 4
    assert store.list_namespaces(suffix=("some", "*", "public", p)) == [spaces[5]]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
    deep = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
    assert len(set(deep)) == len(deep) == 5
    assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(spaces) - 3
    assert set(store.list_namespaces(prefix=(p,))) == set(spaces)
    for ns in spaces:
        store.delete(ns, "dummy")
    assert store.list_namespaces(prefix=(p,)) == []


def test_list_namespaces_match_whole_labels(store: ChromaStore) -> None:
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
        ("users", "alice\n"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child")}
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }
    assert store.list_namespaces(prefix=["uid", "*", "alice"], limit=100) == [
        ("uid", "users", "alice")
    ]
    assert len(store.list_namespaces(prefix=["uid"], limit=100)) == 3


def test_list_namespaces_metacharacters_are_literal(store: ChromaStore) -> None:
    pairs = [("star*", "starX"), ("q?m", "qXm"), ("br[ack]et", "brXacXket"), ("a%b", "axxb")]
    for label, decoy in pairs:
        store.put((label,), "k", {"v": 1})
        store.put((decoy,), "k", {"v": 1})
        store.put((label, "child"), "k", {"v": 1})
    for label, _ in pairs:
        assert set(store.list_namespaces(prefix=[label], limit=100)) == {
            (label,),
            (label, "child"),
        }


# --- semantic search ------------------------------------------------------------------------------


def test_vector_search_ranks_filters_and_pages(store: ChromaStore) -> None:
    for key, value in [
        ("doc1", {"text": "a red apple on the table", "color": "red", "score": 4.5}),
        ("doc2", {"text": "a red sports car on the road", "color": "red", "score": 3.0}),
        ("doc3", {"text": "a green apple in the orchard", "color": "green", "score": 4.0}),
        ("doc4", {"text": "a blue car parked outside", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    red_apple = store.search(("test",), query="apple", filter={"color": "red"})
    assert [i.key for i in red_apple] == ["doc1", "doc2"]
    assert store.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    high = store.search(("test",), query="automobile", filter={"score": {"$gt": 3.2}})
    assert [i.key for i in high][0] == "doc4" and {i.key for i in high} == {"doc1", "doc3", "doc4"}
    green = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [i.key for i in green] == ["doc3"]
    page1 = store.search(("test",), query="vehicle", limit=2)
    page2 = store.search(("test",), query="vehicle", limit=2, offset=2)
    assert {i.key for i in page1}.isdisjoint({i.key for i in page2})
    scores = [i.score for i in page1 + page2]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_vector_search_follows_updates_and_index_false(store: ChromaStore) -> None:
    store.put(("test",), "doc1", {"text": "zebras graze on the savanna"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    before = store.search(("test",), query="zebra")
    assert before[0].key == "doc1"
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(i.score for i in store.search(("test",), query="zebra") if i.key == "doc1")
    assert after is not None and before[0].score is not None and after < before[0].score
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    assert "doc4" not in [i.key for i in store.search(("test",), query="dogs", limit=3)]
    # Re-putting an indexed item with index=False drops its old vectors.
    store.put(("test",), "doc1", {"text": "zebras graze on the savanna"}, index=False)
    assert next(i.score for i in store.search(("test",), query="zebra") if i.key == "doc1") is None


def test_vector_search_edge_queries(store: ChromaStore) -> None:
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 1


def test_index_fields_per_store_and_per_put(tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path, project_id="fields")
    store.index_fields = [("key1", ["key1"]), ("key3", ["key3"])]
    store.put(("test",), "doc1", {"key1": "volcano eruption", "key2": "violin", "key3": "tax"})
    store.put(("test",), "doc2", {"key1": "piano", "key2": "volcano eruption", "key3": "chess"})
    found = store.search(("test",), query="volcano eruption")
    assert found[0].key == "doc1" and found[0].score is not None and found[0].score > 0.9
    assert found[1].score is not None and found[1].score < 0.9  # doc2's key2 is not indexed
    store.put(("test",), "doc3", {"a": "lighthouse", "b": "submarine"}, index=["a"])
    assert store.search(("test",), query="lighthouse")[0].key == "doc3"
    store.put(("test",), "doc5", {"a": "hhh"}, index=False)
    assert len(store.search(("test",))) == 4


def test_non_ascii_values(store: ChromaStore) -> None:
    texts = {"1": "这是中文", "2": "これは日本語です", "3": "Это русский"}
    for key, text in texts.items():
        store.put(("user_123", "memories"), key, {"text": text})
    for key, text in texts.items():
        assert store.search(("user_123", "memories"), query=text)[0].key == key
        item = store.get(("user_123", "memories"), key)
        assert item is not None and item.value["text"] == text


# --- TTL ------------------------------------------------------------------------------------------

SECOND = 1 / 60  # TTLs are in minutes


def test_ttl_default_and_sweep(tmp_path: Path) -> None:
    store = _open(tmp_path, ttl={"default_ttl": 0.5 * SECOND})
    store.put(("test",), "item1", {"value": "test"})
    item = store.get(("test",), "item1")
    assert item is not None and item.value == {"value": "test"}
    time.sleep(0.7)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None
    assert store.list_namespaces() == []


def test_ttl_per_item_overrides_the_default(tmp_path: Path) -> None:
    store = _open(tmp_path, ttl={"default_ttl": 60.0})
    store.put(("test",), "short", {"value": "short"}, ttl=0.5 * SECOND)
    store.put(("test",), "default", {"value": "default"})
    store.put(("test",), "forever", {"value": "permanent"}, ttl=None)
    time.sleep(0.7)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "short") is None
    assert store.get(("test",), "default") is not None
    assert store.get(("test",), "forever") is not None


def test_ttl_without_a_config(store: ChromaStore) -> None:
    store.put(("test",), "item1", {"value": "short"}, ttl=0.5 * SECOND)
    store.put(("test",), "item2", {"value": "long"}, ttl=60.0)
    # A later put without ttl makes an item permanent (Chroma's upsert merges metadata: the
    # old expiry must not survive it).
    store.put(("test",), "item3", {"value": "was short"}, ttl=0.5 * SECOND)
    store.put(("test",), "item3", {"value": "permanent now"})
    time.sleep(0.7)
    assert store.sweep_ttl() == 1
    assert store.get(("test",), "item1") is None
    assert store.get(("test",), "item2") is not None
    assert store.get(("test",), "item3") is not None


def test_ttl_refresh_on_read(tmp_path: Path) -> None:
    # Margins of two seconds: the suite runs on 2 cores, sometimes beside a model.
    store = _open(tmp_path, ttl={"default_ttl": 4.0 * SECOND, "refresh_on_read": True})
    store.put(("test",), "item1", {"value": "test"})
    store.put(("test",), "item2", {"value": "other"})
    time.sleep(2.2)
    assert store.sweep_ttl() == 0
    assert store.get(("test",), "item1") is not None  # refreshes item1 only
    assert [i.key for i in store.search(("test",), filter={"value": "other"})] == ["item2"]
    time.sleep(2.2)
    assert store.sweep_ttl() == 0  # both were refreshed 2.2 s ago
    assert store.get(("test",), "item1", refresh_ttl=False) is not None
    time.sleep(4.4)
    assert store.sweep_ttl() == 2


def test_refresh_ttl_false_lets_items_expire(tmp_path: Path) -> None:
    store = _open(tmp_path, ttl={"default_ttl": 1.0 * SECOND, "refresh_on_read": False})
    store.put(("test",), "item1", {"value": "test"})
    time.sleep(0.6)
    assert store.get(("test",), "item1") is not None  # refresh_on_read False: no refresh
    assert store.search(("test",)) != []
    time.sleep(0.6)
    assert store.sweep_ttl() == 1


def test_expired_items_stay_until_swept_unless_omitted(tmp_path: Path) -> None:
    kept = _open(tmp_path / "a", ttl={"default_ttl": 0.3 * SECOND})
    omitted = _open(tmp_path / "b", ttl={"default_ttl": 0.3 * SECOND, "omit_expired": True})
    for store in (kept, omitted):
        store.put(("omit", "expired"), "e", {"data": "gone"})
        store.put(("omit", "control"), "c", {"data": "keep"}, ttl=None)
        for key in "abc":
            store.put(("page",), key, {"k": key}, ttl=None)
        store.put(("page",), "x", {"k": "x"})  # expires, inside the first page
    time.sleep(0.5)
    # LangGraph's default: an expired item is returned until a sweep deletes it...
    assert kept.get(("omit", "expired"), "e", refresh_ttl=False) is not None
    assert ("omit", "expired") in kept.list_namespaces(prefix=("omit",))
    # ...and with omit_expired no read path returns it (and reading does not revive it).
    assert omitted.get(("omit", "expired"), "e", refresh_ttl=True) is None
    assert omitted.search(("omit", "expired"), refresh_ttl=True) == []
    assert [i.key for i in omitted.search(("omit", "control"))] == ["c"]
    spaces = omitted.list_namespaces(prefix=("omit",))
    assert ("omit", "expired") not in spaces and ("omit", "control") in spaces
    # Filtering happens before the page is cut.
    assert [i.key for i in omitted.search(("page",), limit=2)] == ["a", "b"]
    assert [i.key for i in omitted.search(("page",), limit=2, offset=2)] == ["c"]
    assert omitted.sweep_ttl() == 2


def test_ttl_sweeper_thread(tmp_path: Path) -> None:
    store = _open(
        tmp_path, ttl={"default_ttl": 0.3 * SECOND, "sweep_interval_minutes": 0.2 * SECOND}
    )  # type: ignore[typeddict-item]
    store.start_ttl_sweeper()
    try:
        store.put(("test",), "item1", {"value": "test"})
        assert store.get(("test",), "item1") is not None
        deadline = time.monotonic() + 5
        # Reads that refresh the TTL would keep the item alive: these do not.
        while store.get(("test",), "item1", refresh_ttl=False) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store.get(("test",), "item1", refresh_ttl=False) is None
    finally:
        assert store.stop_ttl_sweeper(timeout=5)


def test_async_ttl(tmp_path: Path) -> None:
    store = _open(tmp_path, ttl={"default_ttl": 0.3 * SECOND})

    async def go() -> None:
        await store.aput(("test",), "item1", {"value": "test"})
        item = await store.aget(("test",), "item1")
        assert item is not None and item.value == {"value": "test"}
        await asyncio.sleep(0.5)
        assert store.sweep_ttl() == 1
        assert await store.aget(("test",), "item1") is None

    asyncio.run(go())


# --- several processes on one store ---------------------------------------------------------------


def test_another_writer_is_seen(tmp_path: Path) -> None:
    # Two stores on one directory have separate clients and mirrors, as two processes do.
    reader, writer = _open(tmp_path), _open(tmp_path)
    reader.put(("shared",), "mine", {"v": 1})
    reader.put(("shared",), "doomed", {"v": 2})
    assert len(reader.search(("shared",))) == 2
    writer.put(("shared",), "theirs", {"v": 3})
    writer.put(("other",), "x", {"v": 4})
    writer.delete(("shared",), "doomed")
    assert {i.key for i in reader.search(("shared",))} == {"mine", "theirs"}
    assert reader.list_namespaces() == [("other",), ("shared",)]
    writer.put(("shared",), "mine", {"v": 10}, ttl=0.2 * SECOND)
    mine = reader.get(("shared",), "mine")
    assert mine is not None and mine.value == {"v": 10}
    time.sleep(0.3)
    assert writer.sweep_ttl() == 1
    assert reader.get(("shared",), "mine") is None


def test_times_read_back_from_chroma_equal_the_written_ones(
    store: ChromaStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chroma returns this timestamp a few ulps off unless it is rounded to the microsecond
    # (it made the update test above flaky: created_at moved by 1 µs on the first update).
    from atom_agent.memory import langgraph_store

    now = [1795472187.0000157]  # Chroma returned it as ….0000155: another microsecond
    monkeypatch.setattr(langgraph_store.time, "time", lambda: now[0])
    ns = ("t",)
    store.put(ns, "k", {"v": 1})
    first = store.get(ns, "k")
    now[0] = 1795472190.5
    store.put(ns, "k", {"v": 2})
    second = store.get(ns, "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
