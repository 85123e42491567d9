"""A LangGraph `BaseStore` over atom_agent's Chroma memory store, with semantic search.

Name it in ``langgraph.json`` so LangGraph Server uses it as the long-term store (a dotted
module path ending in the factory, or a file path and ``:factory``; both load here)::

    "store": {"path": "atom_agent.memory.langgraph_store.make_store"}
    "store": {"path": "./src/atom_agent/memory/langgraph_store.py:make_store"}

Items live in their own collection of the same Chroma store (per project, like memories);
namespaces, filters, pagination and scores follow LangGraph's ``InMemoryStore``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base import validate_op_namespace as _validate_op
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from atom_agent.context import Context
from atom_agent.memory.embeddings import DIMENSIONS, Embedder
from atom_agent.memory.records import decode_vector, encode_vector
from atom_agent.memory.store import ChromaBackend

_NO_VECTOR = [1.0] + [0.0] * (DIMENSIONS - 1)  # Chroma needs some vector for unindexed items


class ChromaStore(BaseStore):
    """LangGraph's store API (``put/get/search/delete/list_namespaces``) on Chroma.

    ``search(namespace_prefix, query=...)`` ranks by cosine similarity of the item's indexed
    text (``index_fields``, default the whole value as JSON, as in ``InMemoryStore``), using
    atom_agent's offline embedding model. TTLs are not supported.
    """

    supports_ttl = False

    def __init__(
        self,
        backend: ChromaBackend,
        *,
        project_id: str = "default",
        index_fields: Sequence[str] = ("$",),
    ) -> None:
        self.backend = backend
        self.project_id = project_id
        self.collection = backend.collection("lgstore", project_id)
        self.index_fields = [_path(f) for f in index_fields]
        self.embedder = Embedder.shared()

    @classmethod
    def open(
        cls,
        workspace: str | os.PathLike[str],
        *,
        project_id: str = "default",
        chroma_url: str | None = None,
    ) -> ChromaStore:
        """Open the store of `workspace` (embedded) or of a Chroma server."""
        return cls(ChromaBackend.open(workspace, chroma_url=chroma_url), project_id=project_id)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order; reads see the store as it was before this batch's puts."""
        ops = list(ops)
        for op in ops:
            _validate_op(op)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op  # the last put of a key wins
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        if puts:
            self._apply_puts(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (Chroma's client is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- operations ------------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        got = self.collection.get(ids=[_item_id(op.namespace, op.key)], include=["metadatas"])
        if not got["ids"]:
            return None
        return _to_item(got["metadatas"][0])

    def _candidates(self, prefix: tuple[str, ...]) -> list[dict[str, Any]]:
        where = {"ns0": prefix[0]} if prefix else None
        got = self.collection.get(where=where, include=["metadatas"])
        metas: list[dict[str, Any]] = [m for m in got["metadatas"] or [] if m]
        return [m for m in metas if tuple(json.loads(m["ns"]))[: len(prefix)] == prefix]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        metas = [
            m
            for m in self._candidates(tuple(op.namespace_prefix))
            if not op.filter
            or all(_matches(json.loads(m["value"]).get(k), v) for k, v in op.filter.items())
        ]
        metas.sort(key=lambda m: float(m["created_at"]))  # insertion order, as InMemoryStore
        if not op.query:
            return [_to_search_item(m, None) for m in metas[op.offset : op.offset + op.limit]]
        query = self.embedder.embed_query(op.query)
        scored: list[tuple[float, dict[str, Any]]] = []
        unscored: list[dict[str, Any]] = []
        for meta in metas:
            if meta.get("vec"):
                vectors = decode_vector(str(meta["vec"])).reshape(-1, DIMENSIONS)
                scored.append((float((vectors @ query).max()), meta))
            else:
                unscored.append(meta)
        scored.sort(key=lambda pair: pair[0], reverse=True)
        kept: list[SearchItem] = [
            _to_search_item(m, s) for s, m in scored[op.offset : op.offset + op.limit]
        ]
        if len(kept) < op.limit:
            kept.extend(_to_search_item(m, None) for m in unscored[: op.limit - len(kept)])
        return kept

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        got = self.collection.get(include=["metadatas"])
        spaces = {tuple(json.loads(m["ns"])) for m in got["metadatas"] or [] if m}
        if op.match_conditions:
            spaces = {s for s in spaces if all(_ns_match(c, s) for c in op.match_conditions)}
        if op.max_depth is not None:
            spaces = {s[: op.max_depth] for s in spaces}
        return sorted(spaces)[op.offset : op.offset + op.limit]

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
        vectors = self.embedder.embed(texts)
        with self.backend.write_lock():
            if deletes:
                self.collection.delete(ids=deletes)
            if not writes:
                return
            ids = [_item_id(p.namespace, p.key) for p in writes]
            old = self.collection.get(ids=ids, include=["metadatas"])
            created = {
                i: m["created_at"] for i, m in zip(old["ids"], old["metadatas"], strict=True)
            }
            now = time.time()
            metas: list[dict[str, Any]] = []
            embeddings: list[list[float]] = []
            for i, (put, item_id) in enumerate(zip(writes, ids, strict=True)):
                mine = vectors[[j for j, owner in enumerate(owners) if owner == i]]
                meta: dict[str, Any] = {
                    "ns": json.dumps(list(put.namespace)),
                    "ns0": put.namespace[0],
                    "key": put.key,
                    "value": json.dumps(put.value, ensure_ascii=False),
                    "created_at": created.get(item_id, now),
                    "updated_at": now,
                }
                if len(mine):
                    meta["vec"] = encode_vector(mine.reshape(-1))
                metas.append(meta)
                embeddings.append(mine.mean(axis=0).tolist() if len(mine) else _NO_VECTOR)
            self.collection.upsert(ids=ids, metadatas=metas, embeddings=np.array(embeddings))


def make_store() -> ChromaStore:
    """The store LangGraph Server loads from ``langgraph.json`` (configured by ``ATOM_*``)."""
    ctx = Context.from_env()
    return ChromaStore.open(
        ctx.workspace, project_id=ctx.project_id, chroma_url=ctx.chroma_url or None
    )


def _path(field: str) -> tuple[str, str | list[str]]:
    # As InMemoryStore: "$" (the whole value) is passed through untokenised.
    return (field, field if field == "$" else tokenize_path(field))


def _item_id(namespace: tuple[str, ...], key: str) -> str:
    return hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()[:40]


def _dt(value: Any) -> datetime:
    return datetime.fromtimestamp(float(value), tz=UTC)


def _to_item(meta: dict[str, Any]) -> Item:
    return Item(
        value=json.loads(meta["value"]),
        key=str(meta["key"]),
        namespace=tuple(json.loads(meta["ns"])),
        created_at=_dt(meta["created_at"]),
        updated_at=_dt(meta["updated_at"]),
    )


def _to_search_item(meta: dict[str, Any], score: float | None) -> SearchItem:
    item = _to_item(meta)
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _ns_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, and $eq/$ne/$gt/$gte/$lt/$lte."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            if any(k not in _OPERATORS for k in wanted):
                raise ValueError(f"Unsupported operator in filter: {sorted(wanted)}")
            return all(_OPERATORS[k](value, v) for k, v in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)
