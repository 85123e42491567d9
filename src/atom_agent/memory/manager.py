"""MemoryManager: remember / recall / forget and the rest of the long-term memory API."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from atom_agent.context import Context
from atom_agent.errors import MemoryNotFoundError, MemoryValidationError
from atom_agent.memory.changes import Applied, MemoryChanges
from atom_agent.memory.embeddings import Embedder, Vector
from atom_agent.memory.index import supersession_chain
from atom_agent.memory.records import (
    TYPE_CODES,
    MemoryRecord,
    MemoryType,
    SourceType,
    check_id,
    check_limit,
    check_unit,
    new_record,
    optional_text,
    record_from_metadata,
    require_session,
    restore_record,
    validate_type,
)
from atom_agent.memory.store import ChromaBackend
from atom_agent.memory.sync import AccessFlusher, ProjectSync
from atom_agent.session import SessionContext
from atom_agent.telemetry import emit

logger = logging.getLogger(__name__)


class MemoryManager:
    """Typed, confidence-scored, supersedable long-term memory, isolated per project.

    Every call takes the caller's :class:`SessionContext`; its ``project_id`` selects the only
    records the call can see or change (an id from another project is "not found"). Recall is
    exact: a numpy mirror of the project's records is ranked in-process, refreshed whenever
    another writer changed the store.

    Example:
        >>> with MemoryManager.open("atom_workspace") as memory:  # doctest: +SKIP
        ...     s = SessionContext(session_id="s1", project_id="demo")
        ...     memory.remember(s, "The tests use pytest", type="convention")
        ...     memory.recall(s, "which test framework?")
    """

    def __init__(self, backend: ChromaBackend) -> None:
        self.backend = backend
        # The model loads (≈ 0.3 s) in the background while the first call loads its project's
        # mirror: a fresh process's first recall waits for the slower of the two, not both.
        threading.Thread(target=_load_embedder, name="atom-embedder-load", daemon=True).start()
        self._projects: dict[str, ProjectSync] = {}
        # Access counts are written by a background thread so that recall never waits on a write.
        self._flusher = AccessFlusher(lambda: list(self._projects.values()))

    @property
    def embedder(self) -> Embedder:
        """The process's embedding model (waits for it if it is still loading)."""
        return Embedder.shared()

    # --- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        workspace: str | os.PathLike[str],
        *,
        chroma_url: str | None = None,
    ) -> MemoryManager:
        """Open the memory of `workspace` (``<workspace>/memory``) or of a Chroma server.

        Args:
            workspace: the workspace root; the embedded store lives in its ``memory/``.
            chroma_url: a ``chroma run`` server (``http://host:port``); default
                ``$ATOM_CHROMA_URL``, and the embedded store when neither is set.
        """
        return cls(ChromaBackend.open(workspace, chroma_url=chroma_url))

    @classmethod
    def from_context(cls, ctx: Context) -> MemoryManager:
        """Open the memory a run's :class:`Context` configures."""
        # chroma_url "" = embedded: the Context resolved ATOM_CHROMA_URL
        return cls.open(ctx.workspace, chroma_url=ctx.chroma_url)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (a closed manager still answers recalls)."""
        return self._flusher.closed

    def close(self) -> None:
        """Write pending access counts and release the client's handles."""
        if self._flusher.stop():
            self._projects.clear()
            self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _sync(self, project_id: str) -> ProjectSync:
        with self.backend.lock:
            sync = self._projects.get(project_id)
            if sync is None:
                sync = ProjectSync(self.backend, project_id, on_due=self._flusher.wake)
                self._projects[project_id] = sync
            return sync

    # --- writing ---------------------------------------------------------------------------------

    def remember(
        self,
        session: SessionContext,
        content: str,
        *,
        type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8,
        rationale: str | None = None,
        source_type: SourceType | str = SourceType.AGENT,
        importance: float = 0.5,
        ttl_s: float | None = None,
    ) -> MemoryRecord:
        """Store one memory now and return it.

        Raises:
            MissingSessionError: no session context.
            MemoryValidationError: empty or over-long content, unknown type or source.
        """
        return self.remember_many(
            session,
            [
                {
                    "content": content,
                    "type": type,
                    "confidence": confidence,
                    "rationale": rationale,
                    "source_type": source_type,
                    "importance": importance,
                    "ttl_s": ttl_s,
                }
            ],
            _event="memory.remember",
        )[0]

    def remember_many(
        self,
        session: SessionContext,
        items: Iterable[Mapping[str, Any]],
        *,
        _event: str = "memory.remember_many",
    ) -> list[MemoryRecord]:
        """Store several memories with batched embedding; every item is validated first.

        Each item holds :meth:`remember`'s keyword arguments (``content`` required).
        """
        session = require_session(session, "remember")
        started = time.perf_counter()
        now = time.time()
        records = [new_record(session, item, now) for item in items]
        self._store(session.project_id, records)
        emit(
            _event,
            session_id=session.session_id,
            project_id=session.project_id,
            count=len(records),
            memory_id=records[0].id if len(records) == 1 else None,
            memory_type=records[0].type.value if len(records) == 1 else None,
            source_type=records[0].source_type.value if records else None,
            duration_ms=_ms(started),
        )
        return records

    def _store(self, project_id: str, records: list[MemoryRecord]) -> None:
        self._sync(project_id).store(records, self.embedder.embed)

    def forget(
        self,
        session: SessionContext,
        memory_id: str,
        *,
        reason: str | None = None,
        replacement_id: str | None = None,
    ) -> MemoryRecord:
        """Soft-delete a memory: it leaves normal recall but stays for provenance.

        Args:
            session: the caller's session context.
            memory_id: the memory to supersede.
            reason: why it no longer holds.
            replacement_id: the memory that supersedes it; must exist in this project and differ.

        Raises:
            MemoryNotFoundError: either id is not a live memory of this project.
            MemoryValidationError: bad ids (empty, or the replacement is the memory itself).
        """
        changes = MemoryChanges(require_session(session, "forget"))
        changes.forget(memory_id, reason=reason, replacement_id=replacement_id)
        applied = self.apply(changes)
        if applied.missing:
            missing = applied.missing[0]
            if missing == replacement_id and missing != memory_id:
                raise MemoryNotFoundError(missing, "replacement memory")
            raise MemoryNotFoundError(missing)
        return applied.records[changes.changes[0].memory_id]

    def apply(self, changes: MemoryChanges) -> Applied:
        """Store new records and change existing ones in one write (see :class:`MemoryChanges`).

        Changes that name a record which is not live in the project (forgotten by expiry,
        another project's, never written) change nothing and are listed in
        :attr:`Applied.missing`; the rest are applied. Pending access counts of the project
        are written with them.
        """
        session = changes.session
        started = time.perf_counter()
        applied = self._sync(session.project_id).apply(changes, self.embedder.embed)
        spent = _ms(started)
        for memory_id in applied.stored:
            record = applied.records[memory_id]
            emit(
                "memory.remember",
                session_id=session.session_id,
                project_id=session.project_id,
                count=1,
                memory_id=memory_id,
                memory_type=record.type.value,
                source_type=record.source_type.value,
                duration_ms=spent,
            )
        for change in changes.changes:
            if change.memory_id not in applied.changed:
                continue
            record = applied.records[change.memory_id]
            fields: dict[str, Any] = (
                {"replacement_id": record.superseded_by, "reason": record.supersede_reason}
                if change.kind == "forget"
                else {"confidence": record.confidence}
            )
            emit(
                f"memory.{change.kind}",
                session_id=session.session_id,
                project_id=session.project_id,
                memory_id=change.memory_id,
                duration_ms=spent,
                **fields,
            )
        return applied

    # --- reading ---------------------------------------------------------------------------------

    def get(self, session: SessionContext, memory_id: str) -> MemoryRecord:
        """One memory of this project (superseded ones included; expired ones are gone).

        Raises:
            MemoryNotFoundError: no such live memory in this project.
        """
        session = require_session(session, "get")
        found = self._sync(session.project_id).fetch(check_id(memory_id))
        emit(
            "memory.get",
            session_id=session.session_id,
            project_id=session.project_id,
            memory_id=memory_id,
            found=found is not None,
        )
        if found is None:
            raise MemoryNotFoundError(memory_id)
        return found

    def get_many(self, session: SessionContext, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        """The live memories of this project among `ids` (missing ones left out), in one read.

        Unlike :meth:`get`, access counts are as last written (at most a flush interval behind).
        """
        session = require_session(session, "get_many")
        wanted = [check_id(memory_id) for memory_id in ids]
        found = self._sync(session.project_id).fetch_many(wanted)
        emit(
            "memory.get_many",
            session_id=session.session_id,
            project_id=session.project_id,
            wanted=len(set(wanted)),
            found=len(found),
        )
        return found

    def recall(
        self,
        session: SessionContext,
        query: str | None = None,
        *,
        type: MemoryType | str = "all",
        min_confidence: float = 0.5,
        limit: int = 10,
        include_superseded: bool = False,
    ) -> list[MemoryRecord]:
        """The most relevant memories of this project, and count an access on each.

        With a query, ranked by semantic similarity blended with keyword overlap, confidence and
        recency; without one, newest first. Superseded memories only with `include_superseded`.

        Raises:
            MemoryValidationError: type not ``all`` or a memory type, min_confidence outside
                0–1, limit outside 1–50.
        """
        session = require_session(session, "recall")
        started = time.perf_counter()
        kind = validate_type(type, allow_all=True)
        floor = check_unit(min_confidence, "min_confidence")
        limit = check_limit(limit)
        text = optional_text(query, "query")
        sync = self._sync(session.project_id)
        sync.index()  # a first call loads the mirror meanwhile the model finishes loading
        vector = self.embedder.embed_query(text) if text else None
        found = self._recall_counted(
            sync, vector, text, kind=kind, floor=floor, limit=limit, superseded=include_superseded
        )
        emit(
            "memory.recall",
            session_id=session.session_id,
            project_id=session.project_id,
            query=text[:200] if text else None,
            memory_type=kind,
            min_confidence=floor,
            limit=limit,
            include_superseded=bool(include_superseded),
            count=len(found),
            duration_ms=_ms(started),
        )
        return found

    def _recall_counted(
        self,
        sync: ProjectSync,
        vector: Vector | None,
        text: str | None,
        *,
        kind: str,
        floor: float,
        limit: int,
        superseded: bool,
    ) -> list[MemoryRecord]:
        """The ranked records (under the store lock), each with the access it now counts."""
        now = time.time()
        with self.backend.lock:
            index = sync.index()
            keep = index.mask(
                type_code=None if kind == "all" else TYPE_CODES[kind],
                min_confidence=floor,
                include_superseded=bool(superseded),
                now=now,
            )
            hits = index.rank(keep, vector, text, limit, now)
            found = [
                record_from_metadata(
                    index.ids[h.row], index.docs[h.row], index.metas[h.row], score=h.score
                )
                for h in hits
            ]
            sync.note_access([r.id for r in found], now)
        return [
            replace(
                r,
                access_count=r.access_count + 1,
                last_accessed_at=datetime.fromtimestamp(now, tz=UTC),
            )
            for r in found
        ]

    def history(self, session: SessionContext, memory_id: str) -> list[MemoryRecord]:
        """The supersession chain through a memory: what it replaced, then what replaced it.

        Raises:
            MemoryNotFoundError: no such memory in this project.
        """
        session = require_session(session, "history")
        start = self.get(session, memory_id)
        sync = self._sync(session.project_id)
        with self.backend.lock:
            chain = supersession_chain(sync.index(), start, time.time())
        emit(
            "memory.history",
            session_id=session.session_id,
            project_id=session.project_id,
            memory_id=start.id,
            count=len(chain),
        )
        return chain

    def export(self, session: SessionContext) -> list[dict[str, Any]]:
        """Every live record of this project (superseded included) as JSON-ready dicts."""
        session = require_session(session, "export")
        sync = self._sync(session.project_id)
        sync.flush_access()  # pending access counts first
        with self.backend.lock:
            index = sync.index()
            now = time.time()
            rows = [r for r in range(len(index.ids)) if index.live(index.ids[r], now) is not None]
            out = [record_from_metadata(index.ids[r], index.docs[r], index.metas[r]) for r in rows]
        emit(
            "memory.export",
            session_id=session.session_id,
            project_id=session.project_id,
            count=len(out),
        )
        return [r.to_dict() for r in sorted(out, key=lambda r: (r.created_at, r.id))]

    def import_(self, session: SessionContext, records: Iterable[Mapping[str, Any]]) -> int:
        """Load exported records into this project (ids and history kept, project forced).

        Records are validated like :meth:`remember` and re-embedded; an existing id is replaced.
        Returns how many were imported.
        """
        session = require_session(session, "import")
        started = time.perf_counter()
        now = time.time()
        loaded: list[MemoryRecord] = []
        for i, item in enumerate(records):
            try:
                fresh = new_record(session, item, now)
                loaded.append(restore_record(fresh, item))
            except MemoryValidationError as exc:
                raise MemoryValidationError(f"record {i}: {exc}") from None
        self._store(session.project_id, loaded)
        emit(
            "memory.import",
            session_id=session.session_id,
            project_id=session.project_id,
            count=len(loaded),
            duration_ms=_ms(started),
        )
        return len(loaded)

    def sweep_expired(self, session: SessionContext) -> int:
        """Delete the expired records of the session's project; returns how many."""
        project_id = require_session(session, "sweep").project_id
        removed = self._sync(project_id).sweep(time.time())
        emit("memory.sweep", project_id=project_id, count=removed)
        return removed


def _load_embedder() -> None:
    try:
        Embedder.shared()
    except Exception:  # noqa: BLE001 - the first real use loads it again and raises to its caller
        logger.debug("preloading the embedding model failed", exc_info=True)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)
