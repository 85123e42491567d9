"""Several memory writes applied as one: new records, supersessions and confidence changes.

A graph node that learns several things at once (a committed step: its interface, the older
interface it supersedes, the memories it confirmed) gathers them in a :class:`MemoryChanges`
and hands it to :meth:`MemoryManager.apply`, which stores everything in one Chroma write (one
commit, ≈ 9 ms here whatever its size) instead of one per change.

Every argument is validated when it is added, so a bad change raises before anything is
written; whether the records it names exist is decided inside the write, under its lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from atom_agent.errors import MemoryValidationError
from atom_agent.memory.records import (
    MemoryRecord,
    check_id,
    check_unit,
    new_record,
    optional_text,
    require_session,
    stored_time,
)
from atom_agent.session import SessionContext

MetaChange = Callable[[dict[str, Any], float], dict[str, Any]]
"""The metadata a change sets, from a record's current metadata and the write's time."""


@dataclass
class Change:
    """A change of one existing record (see :class:`MemoryChanges`)."""

    memory_id: str
    kind: str
    """"forget", "reinforce" or "contradict" (the event it emits)."""
    apply: MetaChange
    requires: str | None = None
    """An id that must exist for the change to apply (a replacement)."""


@dataclass
class MemoryChanges:
    """Writes to apply together, in the order added (see :meth:`MemoryManager.apply`).

    Example:
        >>> changes = MemoryChanges(session)  # doctest: +SKIP
        >>> new = changes.remember({"content": "parse() returns a dict", "type": "fact"})
        >>> changes.forget(old_id, reason="superseded", replacement_id=new.id)
        >>> changes.reinforce(used_id, evidence="its tests passed")
        >>> memory.apply(changes)
    """

    session: SessionContext
    now: float = field(default_factory=time.time)
    records: list[MemoryRecord] = field(default_factory=list)
    keep_existing: set[str] = field(default_factory=set)
    changes: list[Change] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.session = require_session(self.session, "apply")

    def __bool__(self) -> bool:
        return bool(self.records or self.changes)

    def remember(self, item: Mapping[str, Any], *, once: bool = False) -> MemoryRecord:
        """Add a new record (``remember`` keyword arguments; ``content`` required).

        With `once` (and an ``id`` in `item`), an existing record with that id (superseded
        ones included) is kept as it is and returned by ``apply`` instead: the write is
        idempotent, decided under the write lock.
        """
        record = new_record(self.session, item, self.now)
        if once:
            if item.get("id") is None:
                raise MemoryValidationError("remember(once=True) needs an id")
            self.keep_existing.add(record.id)
        self.records = [r for r in self.records if r.id != record.id] + [record]
        return record

    def forget(
        self, memory_id: str, *, reason: str | None = None, replacement_id: str | None = None
    ) -> None:
        """Supersede a record (see :meth:`MemoryManager.forget`)."""
        memory_id = check_id(memory_id)
        why = optional_text(reason, "reason")
        replacement = None if replacement_id is None else check_id(replacement_id, "replacement_id")
        if replacement == memory_id:
            raise MemoryValidationError("replacement_id must differ from memory_id")

        def change(meta: dict[str, Any], now: float) -> dict[str, Any]:
            out: dict[str, Any] = {"superseded": True, "superseded_at": stored_time(now)}
            if why is not None:
                out["supersede_reason"] = why
            if replacement is not None:
                out["superseded_by"] = replacement
            return out

        self.changes.append(Change(memory_id, "forget", change, requires=replacement))

    def reinforce(
        self, memory_id: str, *, amount: float = 0.1, evidence: str | None = None
    ) -> None:
        """Raise a record's confidence (see :meth:`MemoryManager.reinforce`)."""
        self._adjust(memory_id, amount, evidence, up=True)

    def contradict(
        self, memory_id: str, *, amount: float = 0.3, evidence: str | None = None
    ) -> None:
        """Lower a record's confidence (see :meth:`MemoryManager.contradict`)."""
        self._adjust(memory_id, amount, evidence, up=False)

    def _adjust(self, memory_id: str, amount: float, evidence: str | None, *, up: bool) -> None:
        memory_id = check_id(memory_id)
        step = check_unit(amount, "amount")
        note = optional_text(evidence, "evidence")
        counter = "reinforced" if up else "contradicted"

        def change(meta: dict[str, Any], now: float) -> dict[str, Any]:
            c = float(meta.get("confidence", 0.0))
            out: dict[str, Any] = {
                "confidence": round(c + step * (1.0 - c) if up else c * (1.0 - step), 6),
                counter: int(meta.get(counter, 0)) + 1,
            }
            if note is not None:
                out["last_evidence"] = note
            return out

        self.changes.append(Change(memory_id, "reinforce" if up else "contradict", change))


@dataclass(frozen=True)
class Applied:
    """What :meth:`MemoryManager.apply` did."""

    records: dict[str, MemoryRecord]
    """Every record added (or kept, for ``once``) and every record changed, by id."""
    stored: list[str]
    """Ids of the records this call wrote new."""
    changed: list[str]
    """Ids of the existing records it changed."""
    missing: list[str]
    """Ids a change named that are not live records of the project (nothing was changed)."""
