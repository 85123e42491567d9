"""The in-process mirror behind ChromaStore: items by namespace, matching, filters, vectors."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from langgraph.store.base import Item, MatchCondition, SearchItem

from atom_agent.memory.embeddings import DIMENSIONS

Vector = npt.NDArray[np.float32]


@dataclass(slots=True)
class Entry:
    """One stored item as the mirror holds it."""

    id: str
    namespace: tuple[str, ...]
    key: str
    raw: str
    """The value as JSON (what Chroma stores; parsed afresh for every item handed out)."""
    value: dict[str, Any]
    """The parsed value, for filters only (callers never get this object)."""
    created_at: float
    updated_at: float
    expires_at: float | None
    ttl: float | None
    """Time to live in minutes, None for an item that never expires."""
    vectors: Vector | None
    """(k, DIMENSIONS) unit vectors of the indexed texts, None when not indexed."""

    def expired(self, now: float) -> bool:
        """Whether the item's TTL has run out (it stays until a sweep deletes it)."""
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        """The LangGraph item (a fresh value object)."""
        return Item(
            value=json.loads(self.raw),
            key=self.key,
            namespace=self.namespace,
            created_at=_dt(self.created_at),
            updated_at=_dt(self.updated_at),
        )

    def search_item(self, score: float | None) -> SearchItem:
        """The LangGraph search result (a fresh value object)."""
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=json.loads(self.raw),
            created_at=_dt(self.created_at),
            updated_at=_dt(self.updated_at),
            score=score,
        )


class StoreIndex:
    """All items of one store, in creation order, with their namespaces and a vector matrix.

    Every read of ChromaStore is answered here (a dict lookup, a scan of namespaces, one
    matrix product); Chroma is read only to load the mirror and to catch up with writers
    in other processes.
    """

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        """By id, in creation order (an update keeps its place, as a dict assignment does)."""
        self.namespaces: dict[tuple[str, ...], int] = {}
        """Item count per namespace (only namespaces that hold items)."""
        self._matrix: Vector | None = None
        self._rows: list[Entry] = []
        self._position: dict[str, int] = {}
        self._starts: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)

    def __len__(self) -> int:
        return len(self.entries)

    def upsert(self, entry: Entry) -> None:
        """Add or replace an item (keeping its place in creation order when it exists)."""
        old = self.entries.get(entry.id)
        if old is None:
            self.namespaces[entry.namespace] = self.namespaces.get(entry.namespace, 0) + 1
        if (old is not None and old.vectors is not None) or entry.vectors is not None:
            self._matrix = None
        self.entries[entry.id] = entry

    def remove(self, item_id: str) -> Entry | None:
        """Drop an item; returns it (None if it was not there)."""
        old = self.entries.pop(item_id, None)
        if old is None:
            return None
        left = self.namespaces[old.namespace] - 1
        if left:
            self.namespaces[old.namespace] = left
        else:
            del self.namespaces[old.namespace]
        if old.vectors is not None:
            self._matrix = None
        return old

    def sort(self) -> None:
        """Put entries in creation order (after loading rows in Chroma's order)."""
        self.entries = dict(sorted(self.entries.items(), key=lambda kv: kv[1].created_at))
        self._matrix = None

    # --- reading ---------------------------------------------------------------------------------

    def covers_all(self, prefix: tuple[str, ...]) -> bool:
        """Whether every stored item's namespace starts with `prefix`."""
        n = len(prefix)
        return all(ns[:n] == prefix for ns in self.namespaces)

    def within(
        self,
        prefix: tuple[str, ...],
        keep: Callable[[Entry], bool] | None = None,
    ) -> Iterator[Entry]:
        """Items whose namespace starts with `prefix` and that `keep` accepts, oldest first."""
        entries: Iterator[Entry] = iter(self.entries.values())
        if prefix:
            n = len(prefix)
            spaces = {ns for ns in self.namespaces if ns[:n] == prefix}
            if not spaces:
                return
            if len(spaces) < len(self.namespaces):
                entries = (e for e in entries if e.namespace in spaces)
        for entry in entries:
            if keep is None or keep(entry):
                yield entry

    def scores(self, query: Vector) -> tuple[list[Entry], Vector, dict[str, int]]:
        """Indexed items, the best cosine similarity of each to `query`, and their positions."""
        if self._matrix is None:
            self._build_matrix()
        if self._matrix is None or not self._rows:
            return [], np.zeros(0, dtype=np.float32), {}
        best: Vector = np.maximum.reduceat(self._matrix @ query, self._starts)
        return self._rows, best, self._position

    def _build_matrix(self) -> None:
        rows = [e for e in self.entries.values() if e.vectors is not None]
        self._rows = rows
        self._position = {e.id: i for i, e in enumerate(rows)}
        if not rows:
            self._matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
            self._starts = np.zeros(0, dtype=np.intp)
            return
        blocks = [e.vectors for e in rows if e.vectors is not None]
        sizes = np.array([len(b) for b in blocks], dtype=np.intp)
        self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        self._matrix = np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32)

    def list_namespaces(
        self,
        conditions: tuple[MatchCondition, ...] | None,
        max_depth: int | None,
        keep: Callable[[tuple[str, ...]], bool] | None = None,
    ) -> list[tuple[str, ...]]:
        """Namespaces that meet every condition, cut to `max_depth`, sorted, de-duplicated."""
        spaces: set[tuple[str, ...]] = set()
        for space in self.namespaces:
            if conditions and not all(ns_match(c, space) for c in conditions):
                continue
            if keep is not None and not keep(space):
                continue
            spaces.add(space[:max_depth] if max_depth is not None else space)
        return sorted(spaces)


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=UTC)


def ns_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's namespace match: a prefix or suffix, label by label, ``*`` any one label."""
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _compare(op: str, value: Any, wanted: Any) -> bool:
    if op == "$eq":
        return _equal(value, wanted)
    if op == "$ne":
        return not _equal(value, wanted)
    a, b = _number(value), _number(wanted)
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        # As PostgresStore's JSONB comparison: a missing or non-numeric field matches nothing.
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    return a <= b  # "$lte"


_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def _equal(value: Any, wanted: Any) -> bool:
    # JSON equality: true is not 1.
    if isinstance(value, bool) != isinstance(wanted, bool):
        return False
    return bool(value == wanted)


def _field(value: dict[str, Any], key: str) -> Any:
    """`value[key]`, or the nested field a dotted `key` names (as the SQL stores read it).

    A missing field reads as None, as in InMemoryStore.
    """
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, dict):
            return None
        found = found.get(part)
    return found


def compile_filter(filters: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """One filter as one function: LangGraph's semantics (nested dicts, lists, $eq/$ne/$gt/…)."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for key, wanted in filters.items():
        if "." in key or isinstance(wanted, dict | list | tuple) or isinstance(wanted, bool):
            tests.append(partial(_general_test, key, wanted))
        elif isinstance(wanted, str):
            tests.append(partial(_str_test, key, wanted))
        else:  # numbers and None: true must not equal 1
            tests.append(partial(_scalar_test, key, wanted))
    if len(tests) == 1:
        return tests[0]
    return lambda value: all(test(value) for test in tests)


def _general_test(key: str, wanted: Any, value: dict[str, Any]) -> bool:
    return _matches(_field(value, key), wanted)


def _str_test(key: str, wanted: str, value: dict[str, Any]) -> bool:
    return bool(value.get(key) == wanted)


def _scalar_test(key: str, wanted: Any, value: dict[str, Any]) -> bool:
    return _equal(value.get(key), wanted)


def check_filter(filters: dict[str, Any]) -> None:
    """Raise ValueError for an operator no LangGraph store supports (before any item is read)."""
    for wanted in filters.values():
        if isinstance(wanted, dict):
            if any(k.startswith("$") for k in wanted):
                unknown = sorted(k for k in wanted if k not in _OPERATORS)
                if unknown:
                    raise ValueError(f"Unsupported operator in filter: {unknown}")
            else:
                check_filter(wanted)


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_compare(k, value, v) for k, v in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return _equal(value, wanted)
