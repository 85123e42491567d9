"""A LangGraph `BaseStore` over atom_agent's Chroma memory store, with semantic search.

Name it in ``langgraph.json`` so LangGraph Server uses it as the long-term store (a dotted
module path ending in the factory, or a file path and ``:factory``; both load here)::

    "store": {"path": "atom_agent.memory.langgraph_store.make_store"}
    "store": {"path": "./src/atom_agent/memory/langgraph_store.py:make_store"}

Items live in their own collection of the same Chroma store (per project, like memories);
namespaces, filters, pagination and scores follow LangGraph's ``InMemoryStore``, TTLs follow
its ``TTLConfig`` (``ttl=`` on put, ``refresh_ttl`` on get/search, ``default_ttl``, a sweeper),
as the SQL stores implement them. Reads are answered from an in-process mirror of the
collection (:class:`~atom_agent.memory.store_index.StoreIndex`), refreshed when the change
token shows that another process wrote.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import validate_op_namespace as _validate_op
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from atom_agent.context import Context
from atom_agent.memory.embeddings import DIMENSIONS, Embedder
from atom_agent.memory.records import decode_vector, encode_vector, stored_time
from atom_agent.memory.store import ChromaBackend, collection_name
from atom_agent.memory.store_index import (
    Entry,
    StoreIndex,
    Vector,
    check_filter,
    compile_filter,
)

logger = logging.getLogger(__name__)

Embed = Callable[[list[str]], Vector]
"""Texts to an (n, DIMENSIONS) array of unit vectors."""

_NO_VECTOR = [1.0] + [0.0] * (DIMENSIONS - 1)  # Chroma needs some vector for unindexed items
_PAGE = 5000
# Another process's writes are fetched by their `changed_at` stamp; the margin absorbs clock
# skew between machines sharing one Chroma server.
_REFRESH_MARGIN_S = 30.0
# With a server there is no cross-process lock, so a token check can race a writer.
_SERVER_MAX_STALENESS_S = 5.0
REFRESH_SLACK = 0.01
"""A read refreshes an item's TTL only once the refresh would move its expiry by more than this
fraction of the TTL (one write per read would make every read of a TTL item a Chroma commit)."""


class ChromaStore(BaseStore):
    """LangGraph's store API (``put/get/search/delete/list_namespaces``) on Chroma.

    ``search(namespace_prefix, query=...)`` ranks by cosine similarity of the item's indexed
    text (``index_fields``, default the whole value as JSON, as in ``InMemoryStore``), using
    atom_agent's offline embedding model. Items put with ``ttl=`` (minutes; ``default_ttl``
    of `ttl` when not given) expire that long after their last write or refreshing read and
    are deleted by :meth:`sweep_ttl` (or the sweeper thread); until then reads return them,
    unless ``omit_expired`` is set.

    Chroma upserts merge metadata, so every put writes every field: ``expires_at = 0``,
    ``ttl = 0`` and ``vec = ""`` mean none.
    """

    supports_ttl = True

    def __init__(
        self,
        backend: ChromaBackend,
        *,
        project_id: str = "default",
        index_fields: Sequence[str] = ("$",),
        ttl: TTLConfig | None = None,
        embed: Embed | None = None,
    ) -> None:
        self.backend = backend
        self.project_id = project_id
        self.name = collection_name("lgstore", project_id)
        self.collection = backend.collection("lgstore", project_id)
        self.index_fields = [_path(f) for f in index_fields]
        self.ttl_config = ttl
        self._embed = embed
        self._index: StoreIndex | None = None
        self._seen = ""
        self._checked = 0.0
        self._synced_at = 0.0
        self._sweeper: threading.Thread | None = None
        self._stop_sweeper = threading.Event()

    @classmethod
    def open(
        cls,
        workspace: str | os.PathLike[str],
        *,
        project_id: str = "default",
        chroma_url: str | None = None,
        ttl: TTLConfig | None = None,
        embed: Embed | None = None,
    ) -> ChromaStore:
        """Open the store of `workspace` (embedded) or of a Chroma server.

        `embed` replaces atom_agent's embedding model (texts to unit vectors, DIMENSIONS wide).
        """
        backend = ChromaBackend.open(workspace, chroma_url=chroma_url)
        return cls(backend, project_id=project_id, ttl=ttl, embed=embed)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order; reads see the store as it was before this batch's puts."""
        ops = list(ops)
        for op in ops:
            _validate_op(op)
            if isinstance(op, SearchOp) and op.filter:
                check_filter(op.filter)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        refresh: dict[str, Entry] = {}
        now = time.time()
        query_vectors = {
            op.query: self._embed_query(op.query)
            for op in ops
            if isinstance(op, SearchOp) and op.query
        }
        with self.backend.lock:
            index = self._current()
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(index, op, now, refresh))
                elif isinstance(op, SearchOp):
                    vector = query_vectors.get(op.query) if op.query else None
                    results.append(self._search(index, op, vector, now, refresh))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(index, op, now))
                elif isinstance(op, PutOp):
                    puts[(tuple(op.namespace), op.key)] = op  # the last put of a key wins
                    results.append(None)
                else:
                    raise ValueError(f"Unknown operation type: {type(op)}")
        if refresh:
            self._refresh_ttl(list(refresh.values()))
        if puts:
            self._apply_puts(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (Chroma's client is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- the mirror ------------------------------------------------------------------------------

    def _current(self) -> StoreIndex:
        """The mirror, caught up if another writer changed the collection (call under lock)."""
        clock = time.monotonic()
        stale = self.backend.url is not None and clock - self._checked > _SERVER_MAX_STALENESS_S
        token = self.backend.read_token(self.name)  # read before the data it vouches for
        if self._index is None:
            self._index = self._load_all()
        elif token != self._seen or stale:
            self._catch_up(self._index)
        self._seen = token
        self._checked = clock
        return self._index

    def _load_all(self) -> StoreIndex:
        index = StoreIndex()
        self._synced_at = time.time()
        offset = 0
        while True:
            got = self.collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
            for item_id, meta in zip(got["ids"], got["metadatas"] or [], strict=True):
                if meta:
                    index.upsert(_entry(item_id, meta))
            if len(got["ids"]) < _PAGE:
                break
            offset += _PAGE
        index.sort()
        return index

    def _catch_up(self, index: StoreIndex) -> None:
        """Apply another process's writes: deleted ids go, items changed since are re-read."""
        since = self._synced_at - _REFRESH_MARGIN_S
        self._synced_at = time.time()
        ids = set(self.collection.get(include=[])["ids"])
        for gone in [i for i in index.entries if i not in ids]:
            index.remove(gone)
        got = self.collection.get(where={"changed_at": {"$gte": since}}, include=["metadatas"])
        unknown = [i for i in ids if i not in index.entries and i not in set(got["ids"])]
        if unknown:  # written by a version that did not stamp changed_at
            more = self.collection.get(ids=unknown, include=["metadatas"])
            got["ids"] = list(got["ids"]) + list(more["ids"])
            got["metadatas"] = list(got["metadatas"] or []) + list(more["metadatas"] or [])
        for item_id, meta in zip(got["ids"], got["metadatas"] or [], strict=True):
            if meta:
                index.upsert(_entry(item_id, meta))

    def _written(self, before: str, apply: Callable[[StoreIndex], None]) -> None:
        """After a write (inside the write lock): new token, the change applied to the mirror."""
        token = self.backend.bump_token(self.name)
        with self.backend.lock:
            if self._index is not None:
                apply(self._index)
            if before == self._seen:  # the mirror was current, and now holds our change too
                self._seen = token

    # --- operations ------------------------------------------------------------------------------

    def _omit(self) -> bool:
        return bool(self.ttl_config and self.ttl_config.get("omit_expired", False))

    def _get(
        self, index: StoreIndex, op: GetOp, now: float, refresh: dict[str, Entry]
    ) -> Item | None:
        entry = index.entries.get(_item_id(op.namespace, op.key))
        if entry is None or (self._omit() and entry.expired(now)):
            return None
        if op.refresh_ttl:
            _note_refresh(entry, now, refresh)
        return entry.item()

    def _search(
        self,
        index: StoreIndex,
        op: SearchOp,
        query: Vector | None,
        now: float,
        refresh: dict[str, Entry],
    ) -> list[SearchItem]:
        omit = self._omit()
        test = compile_filter(op.filter) if op.filter else None
        keep: Callable[[Entry], bool] | None = None
        if omit or test is not None:

            def keep(entry: Entry) -> bool:
                if omit and entry.expired(now):
                    return False
                return test is None or test(entry.value)

        prefix = tuple(op.namespace_prefix)
        page: list[tuple[Entry, float | None]]
        if query is None:
            found = index.within(prefix, keep)
            page = [(e, None) for e in islice(found, op.offset, op.offset + op.limit)]
        else:
            rows, best, position = index.scores(query)
            if keep is None and index.covers_all(prefix):  # every item is a candidate
                picked = np.arange(len(rows))
                unscored = (e for e in index.entries.values() if e.vectors is None)
            else:
                candidates = list(index.within(prefix, keep))
                picked = np.array([position[e.id] for e in candidates if e.id in position])
                unscored = (e for e in candidates if e.id not in position)
            # Stable: equal scores keep creation order, as a sorted() of InMemoryStore's list.
            order = picked[np.argsort(-best[picked], kind="stable")] if len(picked) else picked
            window = order[op.offset : op.offset + op.limit]
            page = [(rows[i], float(best[i])) for i in window]
            if len(page) < op.limit:  # as InMemoryStore: unindexed items fill the page
                page.extend((e, None) for e in islice(unscored, op.limit - len(page)))
        if op.refresh_ttl:
            for entry, _ in page:
                _note_refresh(entry, now, refresh)
        return [e.search_item(s) for e, s in page]

    def _list_namespaces(
        self, index: StoreIndex, op: ListNamespacesOp, now: float
    ) -> list[tuple[str, ...]]:
        keep = None
        if self._omit():
            live = {e.namespace for e in index.entries.values() if not e.expired(now)}
            keep = live.__contains__
        spaces = index.list_namespaces(op.match_conditions, op.max_depth, keep)
        return spaces[op.offset : op.offset + op.limit]

    def _embed_texts(self, texts: list[str]) -> Vector:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        if self._embed is not None:
            return np.asarray(self._embed(texts), dtype=np.float32)
        return Embedder.shared().embed(texts)

    def _embed_query(self, text: str) -> Vector:
        if self._embed is not None:
            vector: Vector = np.asarray(self._embed([text]), dtype=np.float32)[0]
            return vector
        return Embedder.shared().embed_query(text)

    def _apply_puts(self, puts: list[PutOp]) -> None:
        deletes = [_item_id(p.namespace, p.key) for p in puts if p.value is None]
        writes = [p for p in puts if p.value is not None]
        texts: list[str] = []
        owners: list[int] = []
        for i, put in enumerate(writes):
            if put.index is False:
                continue
            paths = self.index_fields if put.index is None else [_path(f) for f in put.index]
            for _, tokens in paths:
                for text in get_text_at_path(put.value, tokens):
                    texts.append(text)
                    owners.append(i)
        vectors = self._embed_texts(texts)
        with self.backend.write_lock():
            before = self.backend.read_token(self.name)
            if deletes:
                self.collection.delete(ids=deletes)
            ids = [_item_id(p.namespace, p.key) for p in writes]
            entries: list[Entry] = []
            if writes:
                old = self.collection.get(ids=ids, include=["metadatas"])
                created = {
                    i: m["created_at"] for i, m in zip(old["ids"], old["metadatas"], strict=True)
                }
                now = time.time()
                metas: list[dict[str, Any]] = []
                embeddings: list[list[float]] = []
                for i, (put, item_id) in enumerate(zip(writes, ids, strict=True)):
                    mine = vectors[[j for j, owner in enumerate(owners) if owner == i]]
                    meta = _metadata(put, float(created.get(item_id, now)), now, mine)
                    metas.append(meta)
                    entries.append(_entry(item_id, meta))
                    embeddings.append(mine.mean(axis=0).tolist() if len(mine) else _NO_VECTOR)
                self.collection.upsert(ids=ids, metadatas=metas, embeddings=np.array(embeddings))

            def apply(index: StoreIndex) -> None:
                for item_id in deletes:
                    index.remove(item_id)
                for entry in entries:
                    index.upsert(entry)

            self._written(before, apply)

    # --- TTL -------------------------------------------------------------------------------------

    def _refresh_ttl(self, entries: list[Entry]) -> None:
        """Push the expiry of items just read to now + their TTL (live items only)."""
        with self.backend.write_lock():
            before = self.backend.read_token(self.name)
            now = time.time()
            there = self.collection.get(ids=[e.id for e in entries], include=["metadatas"])
            updates: dict[str, float] = {}
            for item_id, meta in zip(there["ids"], there["metadatas"] or [], strict=True):
                stored = _entry(item_id, meta or {})
                if stored.ttl is not None and not stored.expired(now):
                    updates[item_id] = now + stored.ttl * 60.0
            if not updates:
                return
            self.collection.update(
                ids=list(updates),
                metadatas=[{"expires_at": e, "changed_at": now} for e in updates.values()],
            )

            def apply(index: StoreIndex) -> None:
                for item_id, expires in updates.items():
                    entry = index.entries.get(item_id)
                    if entry is not None:
                        entry.expires_at = expires

            self._written(before, apply)

    def sweep_ttl(self) -> int:
        """Delete every expired item now; returns how many."""
        with self.backend.write_lock():
            before = self.backend.read_token(self.name)
            where = {"$and": [{"expires_at": {"$gt": 0.0}}, {"expires_at": {"$lte": time.time()}}]}
            expired = list(self.collection.get(where=where, include=[])["ids"])
            if not expired:
                return 0
            self.collection.delete(ids=expired)

            def apply(index: StoreIndex) -> None:
                for item_id in expired:
                    index.remove(item_id)

            self._written(before, apply)
        logger.debug("swept %d expired store items of project %s", len(expired), self.project_id)
        return len(expired)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep in a daemon thread every `sweep_interval_minutes` (default: the TTLConfig's)."""
        interval = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes")
        if not interval:
            raise ValueError("no sweep interval: pass one or set ttl['sweep_interval_minutes']")
        if self._sweeper is not None and self._sweeper.is_alive():
            return
        self._stop_sweeper.clear()

        def loop() -> None:
            while not self._stop_sweeper.wait(float(interval) * 60.0):
                try:
                    self.sweep_ttl()
                except Exception:  # a background thread has no caller to raise to: log it
                    logger.warning("TTL sweep of the store failed", exc_info=True)

        self._sweeper = threading.Thread(target=loop, name="atom-store-ttl", daemon=True)
        self._sweeper.start()

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped (or none was running)."""
        if self._sweeper is None:
            return True
        self._stop_sweeper.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped


def _note_refresh(entry: Entry, now: float, refresh: dict[str, Entry]) -> None:
    if entry.ttl is None or entry.expires_at is None or entry.expired(now):
        return  # an expired item is due for deletion: reading it does not bring it back
    ttl_s = entry.ttl * 60.0
    if now + ttl_s - entry.expires_at > ttl_s * REFRESH_SLACK:
        refresh[entry.id] = entry


def _metadata(put: PutOp, created: float, now: float, vectors: Vector) -> dict[str, Any]:
    # Times rounded as Chroma keeps them, so the mirror's entry equals the stored one.
    created, now = stored_time(created), stored_time(now)
    return {
        "ns": json.dumps(list(put.namespace)),
        "ns0": put.namespace[0],
        "key": put.key,
        "value": json.dumps(put.value, ensure_ascii=False),
        "created_at": created,
        "updated_at": now,
        "changed_at": now,
        "ttl": float(put.ttl) if put.ttl else 0.0,
        "expires_at": stored_time(now + float(put.ttl) * 60.0) if put.ttl else 0.0,
        "vec": encode_vector(vectors.reshape(-1)) if len(vectors) else "",
    }


def _entry(item_id: str, meta: dict[str, Any]) -> Entry:
    raw = str(meta["value"])
    vec = str(meta.get("vec") or "")
    ttl = float(meta.get("ttl") or 0.0)
    expires = float(meta.get("expires_at") or 0.0)
    return Entry(
        id=item_id,
        namespace=tuple(json.loads(meta["ns"])),
        key=str(meta["key"]),
        raw=raw,
        value=json.loads(raw),
        created_at=float(meta["created_at"]),
        updated_at=float(meta["updated_at"]),
        expires_at=expires if expires > 0 else None,
        ttl=ttl if ttl > 0 else None,
        vectors=decode_vector(vec).reshape(-1, DIMENSIONS) if vec else None,
    )


def make_store() -> ChromaStore:
    """The store LangGraph Server loads from ``langgraph.json`` (configured by ``ATOM_*``).

    The ``ttl`` section of langgraph.json's ``store`` (which the server passes on in
    ``LANGGRAPH_STORE``) configures TTLs; the server runs no sweeper for a custom store, so
    this one starts its own when ``sweep_interval_minutes`` is set.
    """
    ctx = Context.from_env()
    ttl = _server_ttl_config()
    store = ChromaStore.open(
        ctx.workspace, project_id=ctx.project_id, chroma_url=ctx.chroma_url, ttl=ttl
    )
    if ttl and ttl.get("sweep_interval_minutes"):
        store.start_ttl_sweeper()
    return store


def _server_ttl_config() -> TTLConfig | None:
    raw = os.environ.get("LANGGRAPH_STORE", "").strip()
    if not raw:
        return None
    try:
        config = json.loads(raw)
    except json.JSONDecodeError:
        logger.warning("LANGGRAPH_STORE is not JSON; store TTLs are off")
        return None
    ttl = config.get("ttl") if isinstance(config, dict) else None
    if not isinstance(ttl, dict) or not ttl:
        return None
    known = {k: v for k, v in ttl.items() if k in TTLConfig.__annotations__}
    return TTLConfig(**known)  # type: ignore[typeddict-item]


def _path(field: str) -> tuple[str, str | list[str]]:
    # As InMemoryStore: "$" (the whole value) is passed through untokenised.
    return (field, field if field == "$" else tokenize_path(field))


def _item_id(namespace: tuple[str, ...], key: str) -> str:
    return hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()[:40]
