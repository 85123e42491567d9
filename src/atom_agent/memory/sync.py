"""One project's collection and its mirror: locked writes, change detection, access counts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from atom_agent.memory import snapshot
from atom_agent.memory.changes import Applied, MemoryChanges
from atom_agent.memory.index import ProjectIndex
from atom_agent.memory.records import (
    MemoryRecord,
    decode_vector,
    encode_vector,
    pack_metadata,
    record_from_metadata,
    record_to_metadata,
    stored_time,
    unpack_metadata,
)
from atom_agent.memory.store import ChromaBackend, collection_name

logger = logging.getLogger(__name__)

Row = tuple[str, str, dict[str, Any]]
Write = Callable[[float], list[Row]]

_PAGE = 5000
# Writers stamp `updated_at` inside the write lock, so it follows the change-token order; the
# margin absorbs clock skew between machines sharing one Chroma server.
_REFRESH_MARGIN_S = 30.0
# With a server there is no cross-process lock, so a token check can race a writer: refresh
# anyway after this long.
_SERVER_MAX_STALENESS_S = 5.0
ACCESS_FLUSH_COUNT = 256
"""Pending access counts that make a flush due."""
ACCESS_FLUSH_INTERVAL_S = 2.0
"""Longest time a counted access waits before it is written."""
SNAPSHOT_MIN_CHANGES = 1000
"""Changed rows that make a new snapshot worth writing (see :meth:`ProjectSync.save_snapshot`) …"""
SNAPSHOT_MIN_SHARE = 0.05
"""… and this share of the rows: writing one costs ≈ 1 s of CPU at 100k records, which a
writer of a few thousand records would otherwise pay beside its own work."""
UPSERT_CHUNK = 500
"""Most records sent to Chroma in one upsert."""


Embed = Callable[[list[str]], npt.NDArray[np.float32]]
"""Texts to an (n, dim) array of unit vectors."""


@dataclass
class _Pending:
    """Records one caller waits to see stored (see :meth:`ProjectSync.store`)."""

    records: list[MemoryRecord]
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class ProjectSync:
    """Keeps a :class:`ProjectIndex` in step with one project's Chroma collection."""

    def __init__(self, backend: ChromaBackend, project_id: str, on_due: Callable[[], None]) -> None:
        self.backend = backend
        self.project_id = project_id
        self.name = collection_name("memory", project_id)
        self.collection = backend.collection("memory", project_id)
        self._index: ProjectIndex | None = None
        self._seen = ""
        self._checked = 0.0
        self._pending: dict[str, tuple[int, float]] = {}
        self.on_due = on_due
        self._queue: list[_Pending] = []
        self._queue_lock = threading.Lock()
        self._leading = False
        self._saved_rebuilds = 0

    # --- reading ---------------------------------------------------------------------------------

    def index(self) -> ProjectIndex:
        """The mirror, refreshed if another writer changed the collection since we last looked."""
        with self.backend.lock:
            clock = time.monotonic()
            stale = self.backend.url is not None and clock - self._checked > _SERVER_MAX_STALENESS_S
            token = self.backend.read_token(self.name)  # read before the data it vouches for
            if self._index is None:
                self._index = self._open(token)
            elif token != self._seen or stale:
                self._refresh(self._index)
            self._seen = token
            self._checked = clock
            return self._index

    def _open(self, token: str) -> ProjectIndex:
        # A snapshot brought up to date costs a fraction of loading every record from Chroma.
        path = self.backend.snapshot_path(self.name)
        found = None if path is None else snapshot.load(path, str(self.collection.id))
        if found is None:
            return self._load_all()
        self._index, saved_token = found
        self._saved_rebuilds = self._index.lexical.rebuilds
        if saved_token != token or not token:  # written to since: catch up
            self._refresh(self._index)  # (starts over from Chroma if records were deleted)
        logger.debug("opened %d memories of %s from %s", len(self._index), self.name, path)
        if self._index is found[0]:
            mapped = self._index.vecs
            threading.Thread(
                target=self._own_vectors, args=(self._index, mapped), daemon=True,
                name="atom-memory-vectors",
            ).start()  # fmt: skip
        return self._index

    def _own_vectors(self, index: ProjectIndex, mapped: npt.NDArray[np.float32]) -> None:
        """Give `index` its vectors in ordinary memory instead of the snapshot's mapping.

        Every recall reads all vectors (a matrix–vector product over ≈ 150 MB at 100k). From
        the file mapping (4 KiB pages) that took 38 ms here; from a copy in anonymous memory
        (where the kernel uses huge pages) 8.5 ms. A fresh process's first recall still uses
        the mapping, so it does not wait for the copy (≈ 0.1 s, made under the mirror's lock
        so no write is missed).
        """
        with self.backend.lock:
            if self._index is index and index.vecs is mapped:
                index.vecs = np.array(mapped, copy=True)

    def save_snapshot(self, *, closing: bool = False) -> bool:
        """Write the mirror's snapshot if worth it; True if written.

        Worth it: the BM25 base was rebuilt, or :data:`SNAPSHOT_MIN_CHANGES` rows (and
        :data:`SNAPSHOT_MIN_SHARE` of them) changed, or
        there is no snapshot yet, or (`closing`) anything changed: a snapshot that holds the
        store as it is spares the next process its refresh (≈ 0.4 s cold at 100k records).
        """
        path = self.backend.snapshot_path(self.name)
        with self.backend.lock:
            index = self._index
            if index is None or path is None:
                return False
            rebuilt = index.lexical.rebuilds != self._saved_rebuilds
            enough = max(SNAPSHOT_MIN_CHANGES, SNAPSHOT_MIN_SHARE * len(index.ids))
            due = closing or rebuilt or index.unsaved >= enough or not path.exists()
            if not (due and index.unsaved):
                return False
            taken = snapshot.capture(index, str(self.collection.id), self._seen)
            self._saved_rebuilds = index.lexical.rebuilds
        snapshot.write(taken, path)
        return True

    def _load_all(self) -> ProjectIndex:
        index = ProjectIndex()
        offset = 0
        while True:
            got = self.collection.get(
                include=["documents", "metadatas"], limit=_PAGE, offset=offset
            )
            ids = got["ids"]
            index.upsert(_rows(got))
            if len(ids) < _PAGE:
                break
            offset += _PAGE
        logger.debug("loaded %d memories of project %s", len(index), self.project_id)
        return index

    def _refresh(self, index: ProjectIndex) -> None:
        since = index.synced_at - _REFRESH_MARGIN_S
        got = self.collection.get(
            where={"updated_at": {"$gte": since}}, include=["documents", "metadatas"]
        )
        index.upsert(_rows(got))
        # Fewer records than mirrored rows: someone swept expired ones; start over. (More means
        # a write landed after the query above; its new token brings it in next time.)
        if self.collection.count() < len(index):
            self._index = self._load_all()

    def fetch(self, memory_id: str) -> MemoryRecord | None:
        """One live record of this project straight from Chroma (pending access counts first)."""
        self.flush_access()
        return self.fetch_many([memory_id]).get(memory_id)

    def fetch_many(self, ids: list[str]) -> dict[str, MemoryRecord]:
        """The live records of this project among `ids`, in one Chroma read.

        Access counts are as last written: pending ones are not flushed first (see `fetch`).
        """
        if not ids:
            return {}
        got = self.collection.get(ids=list(dict.fromkeys(ids)), include=["documents", "metadatas"])
        now = time.time()
        return {
            memory_id: record_from_metadata(memory_id, doc, meta)
            for memory_id, doc, meta in _rows(got)
            if self._live(meta, now)
        }

    def _live(self, meta: dict[str, Any] | None, now: float) -> bool:
        # Belt and braces: the collection is per project, and so is every record in it.
        if not meta or meta.get("project_id") != self.project_id:
            return False
        expires = meta.get("expires_at")
        return expires is None or float(expires) > now

    # --- writing ---------------------------------------------------------------------------------

    def store(self, records: list[MemoryRecord], embed: Embed) -> None:
        """Embed and upsert records; returns once they are stored (raises what storing raised).

        Group commit: an upsert is one Chroma write and commit (≈ 10 ms, whatever its size),
        so callers that arrive while a write is in flight queue their records, and the caller
        that finds none in flight embeds (in one batch) and stores everything queued, until
        the queue is empty. Concurrent ``remember`` calls (batch workers, async tools) thus
        share embedding batches and commits, and each caller still returns only after its own
        records are in the store.
        """
        mine = _Pending(records)
        with self._queue_lock:
            self._queue.append(mine)
            lead = not self._leading
            self._leading = True
        if lead:
            self._drain(embed)
        else:
            mine.done.wait()
        if mine.error is not None:
            raise mine.error

    def _drain(self, embed: Embed) -> None:
        while True:
            with self._queue_lock:
                batch, self._queue = self._queue, []
                if not batch:
                    self._leading = False
                    return
            error: BaseException | None = None
            try:
                records = [r for p in batch for r in p.records]
                for start in range(0, len(records), UPSERT_CHUNK):
                    chunk = records[start : start + UPSERT_CHUNK]
                    vectors = embed([r.content for r in chunk])
                    packed = [encode_vector(v) for v in vectors]
                    self.write(partial(upsert_records, self.collection, chunk, packed, vectors))
            except BaseException as exc:  # handed to every caller whose records it held
                error = exc
            for pending in batch:
                pending.error = error
                pending.done.set()

    def write(self, action: Write, *, flush: bool = True) -> list[Row]:
        """Run `action(now)` under the write lock, mirror the rows it returns, bump the token.

        `flush`: write pending access counts first (an action that folds them into its own
        write passes False).
        """
        with self.backend.write_lock():
            before = self.backend.read_token(self.name)
            now = time.time()
            rows = (self._flush_access(now) if flush else []) + action(now)
            if rows:
                self._changed(before, rows)
            return rows

    def _changed(self, before: str, rows: list[Row], removed: list[str] | None = None) -> None:
        token = self.backend.bump_token(self.name)
        with self.backend.lock:
            if self._index is not None:
                # Our write's time bounds a later refresh only if nothing else was missed.
                self._index.upsert(rows, advance=before == self._seen)
                self._index.remove(removed or [])
            if before == self._seen:  # the mirror was current, and now holds our change too
                self._seen = token

    def apply(self, changes: MemoryChanges, embed: Embed) -> Applied:
        """New records, changes of existing ones and pending access counts in one write.

        One ``get`` and one ``upsert`` under the write lock: a single Chroma commit however
        many changes. Changes name records that must be live in the project; those that are
        not are reported as missing and change nothing.
        """
        records = changes.records
        vectors: Any = embed([r.content for r in records]) if records else []
        packed = [encode_vector(v) for v in vectors]
        new = {r.id: (r, p, v) for r, p, v in zip(records, packed, vectors, strict=True)}
        outcome: dict[str, list[str]] = {"stored": [], "changed": [], "missing": []}
        kept: dict[str, Row] = {}
        action = partial(self._apply_rows, changes, new, outcome, kept)
        written = {row[0]: row for row in self.write(action, flush=False)}
        found = {
            memory_id: record_from_metadata(*written[memory_id])
            for memory_id in [*outcome["stored"], *outcome["changed"]]
        }
        for memory_id, row in kept.items():
            found.setdefault(memory_id, record_from_metadata(*row))
        return Applied(found, outcome["stored"], outcome["changed"], outcome["missing"])

    def _apply_rows(
        self,
        changes: MemoryChanges,
        new: dict[str, _NewRecord],
        outcome: dict[str, list[str]],
        kept: dict[str, Row],
        now: float,
    ) -> list[Row]:
        """The write of :meth:`apply` (under the write lock): new rows, access counts, changes.

        Fills `outcome` (stored, changed, missing ids) and `kept` (new records already stored).
        """
        with self.backend.lock:
            pending, self._pending = self._pending, {}
        current = self._current(_wanted_ids(changes, new, pending), now)
        rows, vecs = _new_rows(new, changes.keep_existing, current, now, outcome, kept)
        for memory_id, (count, last) in pending.items():
            if memory_id in current and memory_id not in rows:
                doc, meta, vec = current[memory_id]
                meta = {**meta, **_accessed(meta, count, last)}
                rows[memory_id], vecs[memory_id] = (memory_id, doc, meta), vec
        for change in changes.changes:
            target = change.memory_id
            base = rows.get(target)
            if base is None and target in current:
                doc, meta, vecs[target] = current[target]
                base = (target, doc, meta)
            needed = change.requires
            if base is None or (needed and needed not in rows and needed not in current):
                outcome["missing"].append(target if base is None else str(needed))
                continue
            rows[target] = (target, base[1], {**base[2], **change.meta(base[2], now)})
            if (target not in new or target in kept) and target not in outcome["changed"]:
                outcome["changed"].append(target)
        if not rows:
            return []
        for _, _, meta in rows.values():
            meta["updated_at"] = stored_time(now)
        self.collection.upsert(
            ids=list(rows),
            documents=[r[1] for r in rows.values()],
            metadatas=[pack_metadata(r[2]) for r in rows.values()],
            embeddings=[vecs[i] for i in rows],
        )
        return list(rows.values())

    def _current(self, ids: list[str], now: float) -> dict[str, tuple[str, dict[str, Any], Any]]:
        """Live records among `ids`: document, metadata (a copy) and embedding, by id.

        The embedding is the vector the metadata carries (what recall uses); Chroma's own
        embeddings are read only for a record without one. Reading those needs Chroma's HNSW
        segment, which a Chroma server sometimes cannot open while another client's writes are
        being persisted ("Error creating hnsw segment reader: Nothing found on disk").
        """
        if not ids:
            return {}
        got = self.collection.get(ids=ids, include=["documents", "metadatas"])
        found: dict[str, tuple[str, dict[str, Any], Any]] = {}
        without: list[str] = []
        for memory_id, doc, meta in _rows(got):
            if not self._live(meta, now):
                continue
            vec = meta.get("vec")
            found[memory_id] = (doc, dict(meta), decode_vector(str(vec)) if vec else None)
            if not vec:
                without.append(memory_id)
        if without:
            stored = self.collection.get(ids=without, include=["embeddings"])
            for memory_id, embedding in zip(stored["ids"], stored["embeddings"], strict=True):
                doc, meta, _ = found[memory_id]
                found[memory_id] = (doc, meta, embedding)
        return found

    def note_access(self, ids: list[str], now: float) -> None:
        """Count accesses of live records (rows recall just ranked); they are written in batches.

        Recall stays a read. Calls `on_due` when enough are pending to be worth a write.
        """
        with self.backend.lock:
            for memory_id in ids:
                count, _ = self._pending.get(memory_id, (0, now))
                self._pending[memory_id] = (count + 1, now)
            due = len(self._pending) >= ACCESS_FLUSH_COUNT
        if due:
            self.on_due()

    def flush_access(self) -> None:
        """Write pending access counts now."""
        if self._pending:
            self.write(lambda now: [])

    def _flush_access(self, now: float) -> list[Row]:
        with self.backend.lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return []
        got = self.collection.get(ids=list(pending), include=["documents", "metadatas"])
        rows: list[Row] = []
        for memory_id, doc, meta in _rows(got):
            if not self._live(meta, now):
                continue
            count, last = pending[memory_id]
            # Read-add-write under the lock: increments from other processes are kept.
            partial = {**_accessed(meta, count, last), "updated_at": stored_time(now)}
            rows.append((memory_id, doc, {**meta, **partial}))
        if rows:  # the whole packed metadata (a record written unpacked gets packed keys too)
            self.collection.update(
                ids=[r[0] for r in rows], metadatas=[pack_metadata(r[2]) for r in rows]
            )
        return rows

    def sweep(self, now: float) -> int:
        """Delete expired records; returns how many."""
        with self.backend.write_lock():
            before = self.backend.read_token(self.name)
            got = self.collection.get(where={"expires_at": {"$lte": now}}, include=[])
            expired = list(got["ids"])
            if expired:
                self.collection.delete(ids=expired)
                self._changed(before, [], expired)  # a deletion is a change other mirrors must see
        return len(expired)


def _rows(got: Any) -> list[Row]:
    """The (id, document, fields) rows of a Chroma ``get`` with documents and metadatas."""
    return [
        (memory_id, doc, unpack_metadata(meta))
        for memory_id, doc, meta in zip(
            got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True
        )
    ]


_NewRecord = tuple[MemoryRecord, str, Any]
"""A record :meth:`ProjectSync.apply` stores: the record, its packed vector, its vector."""
_Current = dict[str, tuple[str, dict[str, Any], Any]]


def _wanted_ids(
    changes: MemoryChanges, new: dict[str, _NewRecord], pending: dict[str, tuple[int, float]]
) -> list[str]:
    """The stored records a write of `changes` reads: kept, counted, changed or required."""
    wanted = [*changes.keep_existing, *pending]
    for c in changes.changes:
        # A record kept as it is stored (``once``) is changed from what is stored.
        wanted += [
            i
            for i in (c.memory_id, c.requires)
            if i and (i not in new or i in changes.keep_existing)
        ]
    return list(dict.fromkeys(wanted))


def _new_rows(
    new: dict[str, _NewRecord],
    keep_existing: set[str],
    current: _Current,
    now: float,
    outcome: dict[str, list[str]],
    kept: dict[str, Row],
) -> tuple[dict[str, Row], dict[str, Any]]:
    """Rows and vectors of the new records; one to keep that is already stored goes to `kept`."""
    rows: dict[str, Row] = {}
    vecs: dict[str, Any] = {}
    for memory_id, (record, vec_text, vec) in new.items():
        if memory_id in keep_existing and memory_id in current:
            kept[memory_id] = (memory_id, *current[memory_id][:2])
            continue  # written before (e.g. by this node before a crash): keep it
        rows[memory_id] = (memory_id, record.content, record_to_metadata(record, vec_text, now))
        vecs[memory_id] = vec
        outcome["stored"].append(memory_id)
    return rows, vecs


def _accessed(meta: dict[str, Any], count: int, last: float) -> dict[str, Any]:
    """The access fields of a record after `count` more accesses, the last at `last`."""
    return {
        "access_count": int(meta.get("access_count", 0)) + count,
        "last_accessed_at": stored_time(max(last, float(meta.get("last_accessed_at", 0.0)))),
    }


def upsert_records(
    collection: Any, records: list[MemoryRecord], packed: list[str], vectors: Any, now: float
) -> list[Row]:
    """Write records (with their vectors) to `collection`; returns the mirror rows."""
    rows = [
        (r.id, r.content, record_to_metadata(r, vec, now))
        for r, vec in zip(records, packed, strict=True)
    ]
    collection.upsert(
        ids=[r[0] for r in rows],
        documents=[r[1] for r in rows],
        metadatas=[pack_metadata(r[2]) for r in rows],
        embeddings=vectors,
    )
    return rows


class AccessFlusher:
    """A background thread that writes pending access counts: every few seconds, or when woken."""

    def __init__(self, projects: Callable[[], list[ProjectSync]]) -> None:
        self._projects = projects
        self._due = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="atom-memory-access", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._closed

    def wake(self) -> None:
        """Flush soon (enough counts are pending)."""
        self._due.set()

    def stop(self) -> bool:
        """Stop the thread and flush what is left; False if it was already stopped."""
        if self._closed:
            return False
        self._closed = True
        self._due.set()
        self._thread.join()
        for sync in self._projects():
            sync.flush_access()
            try:
                sync.save_snapshot(closing=True)
            except OSError as exc:  # a cache: the next process loads from Chroma instead
                logger.warning("could not save a memory snapshot (%s); it is only a cache", exc)
        return True

    def _loop(self) -> None:
        while not self._closed:
            self._due.wait(ACCESS_FLUSH_INTERVAL_S)
            self._due.clear()
            if self._closed:
                return
            for sync in self._projects():
                try:
                    sync.flush_access()
                except Exception:  # a background thread has no caller to raise to: log it
                    logger.warning("could not write access counts", exc_info=True)
                try:
                    sync.save_snapshot()  # here, so no recall waits on it
                except OSError as exc:  # a full disk: the snapshot is only a cache
                    logger.warning("could not save a memory snapshot (%s); it is only a cache", exc)
                except Exception:
                    logger.warning("could not save a memory snapshot", exc_info=True)
