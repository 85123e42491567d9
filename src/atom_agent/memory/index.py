"""An in-process numpy mirror of one project's memories: exact filtered top-k without `where`.

Chroma stays the source of truth. The mirror holds each record's vector and the fields recall
filters on as flat arrays, so a type / confidence / supersession filter is a boolean mask and the
ranking one matrix-vector product (Chroma's `where` costs ≈ 90 ms at 100k records; see
docs/architecture.md, "Facts of this machine that shaped the design").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from atom_agent.memory.embeddings import DIMENSIONS
from atom_agent.memory.lexical import LexicalIndex, query_tokens
from atom_agent.memory.lines import Lines
from atom_agent.memory.records import TYPE_CODES, MemoryRecord, decode_vector, record_from_metadata

# Ranking: the vector ranking and the BM25 ranking (each read FUSION_POOL deep) are fused by a
# min-max normalised blend: similarity scaled so the best candidate is 1, BM25 divided by the
# best BM25, weighted BLEND_LEXICAL_WEIGHT. benchmarks/retrieval_bench.py --sweep measured it
# against reciprocal-rank fusion on our labelled set (recall@10 0.966 vs 0.951 at k=60, recall@1
# 0.706 vs 0.586). Confidence and recency then re-order near-ties. A record less similar than
# MIN_RELEVANCE to the query and sharing no token with it is not returned; a query with no
# lexical match ranks by similarity + confidence + recency alone, as before.
RRF_K = 60
BLEND_LEXICAL_WEIGHT = 0.5
LEXICAL_WEIGHT = 1.0
FUSION_POOL = 100
CONFIDENCE_WEIGHT = 0.02
RECENCY_WEIGHT = 0.02
RECENCY_HALF_LIFE_S = 30 * 86_400.0
MIN_RELEVANCE = 0.2


@dataclass(frozen=True)
class Hit:
    """One ranked result: a mirror row and its score."""

    row: int
    score: float


class Metas:
    """Row metadata; a row loaded from a snapshot stays JSON text until first read.

    (Parsing 100k metadata dicts would cost a fresh process more than everything else it loads.)
    """

    def __init__(self, items: Lines[dict[str, Any] | str] | None = None) -> None:
        self._items: Lines[dict[str, Any] | str] = items if items is not None else Lines()

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, row: int) -> dict[str, Any]:
        item = self._items[row]
        if isinstance(item, str):
            item = json.loads(item)
            self._items[row] = item
        return item

    def __setitem__(self, row: int, meta: dict[str, Any]) -> None:
        self._items[row] = meta

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[row] for row in range(len(self._items)))

    def append(self, meta: dict[str, Any]) -> None:
        """Add a row."""
        self._items.append(meta)

    def pack(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Every row's JSON text as one buffer and its offsets (see :class:`Lines`)."""
        return self._items.pack(lambda item: item if isinstance(item, str) else json.dumps(item))


class ProjectIndex:
    """Arrays over every record of one project, grown by doubling."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.docs: Lines[str] = Lines()
        self.metas = Metas()
        self.lexical = LexicalIndex()
        self.pos: dict[str, int] = {}
        cap = 64
        self.vecs = np.zeros((cap, DIMENSIONS), dtype=np.float32)
        self.type_code = np.full(cap, -1, dtype=np.int8)
        self.confidence = np.zeros(cap, dtype=np.float32)
        self.created = np.zeros(cap, dtype=np.float64)
        self.expires = np.full(cap, np.inf, dtype=np.float64)
        self.superseded = np.zeros(cap, dtype=bool)
        self.alive = np.zeros(cap, dtype=bool)
        self.synced_at = 0.0
        """Largest `updated_at` known to follow every change before it, for refreshes."""
        self.unsaved = 0
        """Rows changed since the last snapshot (see :mod:`atom_agent.memory.snapshot`)."""

    def __len__(self) -> int:
        return int(self.alive[: len(self.ids)].sum())

    def _grow(self, need: int) -> None:
        cap = self.vecs.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        grown_vecs = np.zeros((new, DIMENSIONS), dtype=np.float32)  # pages untouched: lazy
        grown_vecs[:cap] = self.vecs
        self.vecs = grown_vecs
        for name, fill in (
            ("type_code", -1),
            ("confidence", 0.0),
            ("created", 0.0),
            ("expires", np.inf),
            ("superseded", False),
            ("alive", False),
        ):
            old = getattr(self, name)
            grown = np.full(new, fill, dtype=old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)

    def upsert(
        self, rows: Iterable[tuple[str, str, dict[str, Any]]], *, advance: bool = True
    ) -> None:
        """Insert or replace rows of (id, document, metadata).

        `advance`: the rows' ``updated_at`` may move :attr:`synced_at` on. Not so for rows this
        process wrote while its mirror lacked other writers' changes: a refresh from past them
        would skip those changes.
        """
        for memory_id, doc, full in rows:
            meta = {k: v for k, v in full.items() if k != "vec"}  # the vector lives in `vecs`
            self.unsaved += 1
            row = self.pos.get(memory_id)
            if row is None:
                row = len(self.ids)
                self._grow(row + 1)
                self.ids.append(memory_id)
                self.docs.append(doc)
                self.metas.append(meta)
                self.pos[memory_id] = row
                self.lexical.changed(row)
            else:
                if self.docs[row] != doc:
                    self.lexical.changed(row)
                self.docs[row] = doc
                self.metas[row] = meta
            if "vec" in full:
                self.vecs[row] = decode_vector(str(full["vec"]))
            self.type_code[row] = TYPE_CODES.get(str(meta.get("type")), -1)
            self.confidence[row] = float(meta.get("confidence", 0.0))
            self.created[row] = float(meta.get("created_at", 0.0))
            expires = meta.get("expires_at")
            self.expires[row] = float(expires) if expires is not None else np.inf
            self.superseded[row] = bool(meta.get("superseded", False))
            self.alive[row] = True
            if advance:
                self.synced_at = max(self.synced_at, float(meta.get("updated_at", 0.0)))

    def remove(self, ids: Iterable[str]) -> None:
        """Mark rows deleted (their slots are not reused)."""
        for memory_id in ids:
            row = self.pos.get(memory_id)
            if row is not None and self.alive[row]:
                self.alive[row] = False
                self.unsaved += 1
                self.lexical.removed(row)

    def live(self, memory_id: str, now: float) -> int | None:
        """The row of a live (present, unexpired) record, or None."""
        row = self.pos.get(memory_id)
        if row is None or not self.alive[row] or self.expires[row] <= now:
            return None
        return row

    def mask(
        self, *, type_code: int | None, min_confidence: float, include_superseded: bool, now: float
    ) -> npt.NDArray[np.bool_]:
        """Rows that pass the recall filters."""
        n = len(self.ids)
        keep = self.alive[:n] & (self.confidence[:n] >= np.float32(min_confidence))
        keep &= self.expires[:n] > now
        if not include_superseded:
            keep &= ~self.superseded[:n]
        if type_code is not None:
            keep &= self.type_code[:n] == type_code
        return keep

    def rank(
        self,
        keep: npt.NDArray[np.bool_],
        query_vector: npt.NDArray[np.float32] | None,
        query_text: str | None,
        limit: int,
        now: float,
        pool: int | None = None,
        fusion: str = "blend",
    ) -> list[Hit]:
        """The best `limit` rows of `keep`: fused relevance, or newest first without a query.

        `pool` is how deep each ranking is read before fusion (default :data:`FUSION_POOL`);
        `fusion` is ``blend`` (min-max normalised scores), ``rrf`` (reciprocal rank), or
        ``vector`` / ``lexical`` (one ranking alone); all but the default are for benchmarks.
        """
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return []
        if query_vector is None:
            order = rows[np.argsort(-self.created[rows], kind="stable")[:limit]]
            return [Hit(int(r), float(self.created[r])) for r in order]
        n = len(self.ids)
        if rows.size * 10 < n:
            # Few rows pass (a rare type): gather them; cheaper than scoring everything. (The
            # copy costs more than it saves above ≈ 10 %: measured 39 vs 24 ms at 22 % of 100k.)
            cos = self.vecs[rows] @ query_vector
        else:
            cos = (self.vecs[:n] @ query_vector)[rows]
        tokens = query_tokens(query_text) if query_text else []
        lex = self.lexical.scores(self.docs, tokens, n)[rows] if tokens else None
        if lex is not None and not lex.any():
            lex = None
        age = np.maximum(0.0, now - self.created[rows])
        prior = CONFIDENCE_WEIGHT * self.confidence[rows] + RECENCY_WEIGHT * np.exp(
            -age * (math.log(2) / RECENCY_HALF_LIFE_S)
        )
        depth = max(pool or FUSION_POOL, limit)
        if fusion == "lexical" and lex is None:
            return []
        if lex is None or fusion == "vector":
            # Similarity + confidence + recency; the exact top `limit` of that sum.
            score = cos + prior
            top = _top(score, limit, cos >= MIN_RELEVANCE)
            return [Hit(int(rows[i]), float(score[i])) for i in top]
        if fusion == "lexical":
            top = _top(lex, limit, lex > 0)
            return [Hit(int(rows[i]), float(lex[i])) for i in top]
        cand, fused = _fuse(cos, lex, depth, fusion)
        score = fused + prior[cand]
        order = np.argsort(-score, kind="stable")[:limit]
        return [Hit(int(rows[cand[i]]), float(score[i])) for i in order]


def _fuse(
    cos: npt.NDArray[np.float32], lex: npt.NDArray[Any], depth: int, fusion: str
) -> tuple[npt.NDArray[np.intp], npt.NDArray[Any]]:
    """The candidates (the top `depth` of each ranking) and their fused relevance.

    ``blend``: min-max normalised similarity and lexical score, weighted; otherwise
    reciprocal-rank fusion scaled so that first in both rankings scores 1.
    """
    relevant = (cos >= MIN_RELEVANCE) | (lex > 0)
    by_vec = _top(cos, depth, relevant)
    by_lex = _top(lex, depth, lex > 0)
    cand = np.union1d(by_vec, by_lex)
    if fusion == "blend":
        top_cos = float(cos[by_vec[0]]) if by_vec.size else 1.0
        lo = float(cos[cand].min())
        fused = (1.0 - BLEND_LEXICAL_WEIGHT) * (cos[cand] - lo) / max(top_cos - lo, 1e-6)
        fused += BLEND_LEXICAL_WEIGHT * lex[cand] / float(lex[by_lex[0]])
    else:
        vr = np.full(cos.size, np.inf)
        vr[by_vec] = np.arange(1, by_vec.size + 1)
        lr = np.full(cos.size, np.inf)
        lr[by_lex] = np.arange(1, by_lex.size + 1)
        fused = (1.0 / (RRF_K + vr[cand]) + LEXICAL_WEIGHT / (RRF_K + lr[cand])) * (
            (RRF_K + 1) / (1.0 + LEXICAL_WEIGHT)
        )
    return cand, fused


def _top(score: npt.NDArray[Any], k: int, ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
    """Positions of the best `k` scores among those `ok`, best first."""
    cand = np.flatnonzero(ok)
    if cand.size > k:
        cand = cand[np.argpartition(-score[cand], k - 1)[:k]]
    return cand[np.argsort(-score[cand], kind="stable")]


def supersession_chain(index: ProjectIndex, start: MemoryRecord, now: float) -> list[MemoryRecord]:
    """`start` with what it (transitively) replaced and what replaced it, oldest link first."""
    predecessors: dict[str, list[str]] = {}
    for row, meta in enumerate(index.metas):
        successor = meta.get("superseded_by")
        if successor and index.live(index.ids[row], now) is not None:
            predecessors.setdefault(str(successor), []).append(index.ids[row])

    def load(memory_id: str, row: int) -> MemoryRecord:
        return record_from_metadata(memory_id, index.docs[row], index.metas[row])

    chain: dict[str, MemoryRecord] = {start.id: start}
    todo = [start.id]
    while todo:  # backwards: everything `start` replaced, directly or not
        for pid in predecessors.get(todo.pop(), []):
            if pid not in chain:
                chain[pid] = load(pid, index.pos[pid])
                todo.append(pid)
    current = start
    while current.superseded_by and current.superseded_by not in chain:  # forwards
        found = index.live(current.superseded_by, now)
        if found is None:
            break
        current = load(current.superseded_by, found)
        chain[current.id] = current

    def hops(record: MemoryRecord) -> int:  # links between `record` and the newest
        seen: set[str] = set()
        while record.superseded_by in chain and record.id not in seen:
            seen.add(record.id)
            record = chain[str(record.superseded_by)]
        return len(seen)

    return sorted(chain.values(), key=lambda r: (-hops(r), r.created_at, r.id))
