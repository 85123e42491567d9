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
from collections.abc import Iterable, Mapping
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


@dataclass(frozen=True)
class Change:
    """A change of one existing record (see :class:`MemoryChanges`); plain data."""

    memory_id: str
    kind: str
    """"forget", "reinforce" or "contradict" (the event it emits)."""
    params: dict[str, Any] = field(default_factory=dict)
    """forget: reason; reinforce/contradict: amount, evidence (None when not given)."""
    requires: str | None = None
    """An id that must exist for the change to apply (a replacement)."""

    def meta(self, meta: Mapping[str, Any], now: float) -> dict[str, Any]:
        """The metadata this change sets, from a record's current metadata and the write's time."""
        p = self.params
        if self.kind == "forget":
            out: dict[str, Any] = {"superseded": True, "superseded_at": stored_time(now)}
            if p.get("reason") is not None:
                out["supersede_reason"] = p["reason"]
            if self.requires is not None:
                out["superseded_by"] = self.requires
            return out
        up = self.kind == "reinforce"
        c, step = float(meta.get("confidence", 0.0)), float(p["amount"])
        counter = "reinforced" if up else "contradicted"
        out = {
            "confidence": round(c + step * (1.0 - c) if up else c * (1.0 - step), 6),
            counter: int(meta.get(counter, 0)) + 1,
        }
        if p.get("evidence") is not None:
            out["last_evidence"] = p["evidence"]
        return out


_KINDS = frozenset({"forget", "reinforce", "contradict"})


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

    def to_data(self) -> dict[str, Any]:
        """These writes as plain data (JSON and checkpoint safe); see :meth:`from_data`."""
        return {
            "records": [r.to_dict() for r in self.records],
            "once": sorted(self.keep_existing),
            "changes": [
                {"memory_id": c.memory_id, "kind": c.kind, "params": dict(c.params),
                 "requires": c.requires}
                for c in self.changes
            ],
        }  # fmt: skip

    @classmethod
    def from_data(cls, session: SessionContext, data: Iterable[Mapping[str, Any]]) -> MemoryChanges:
        """The writes of several :meth:`to_data` values, in order, as one set for `session`.

        Raises:
            MemoryValidationError: a value is not what :meth:`to_data` writes.
        """
        out = cls(session)
        for item in data:
            try:
                part = cls(session)
                part.records = [MemoryRecord.from_dict(dict(r)) for r in item["records"]]
                part.keep_existing = {check_id(i) for i in item["once"]}
                for c in item["changes"]:
                    if c["kind"] not in _KINDS:
                        raise MemoryValidationError(f"unknown change {c['kind']!r}")
                    requires = c.get("requires")
                    part.changes.append(
                        Change(check_id(c["memory_id"]), c["kind"], dict(c["params"]),
                               None if requires is None else check_id(requires))
                    )  # fmt: skip
            except MemoryValidationError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise MemoryValidationError(f"not a set of memory changes: {exc!r}") from exc
            ids = {r.id for r in part.records}  # a later record with the same id wins
            out.records = [r for r in out.records if r.id not in ids] + part.records
            out.keep_existing |= part.keep_existing
            out.changes += part.changes
        return out

    def forget(
        self, memory_id: str, *, reason: str | None = None, replacement_id: str | None = None
    ) -> None:
        """Supersede a record (see :meth:`MemoryManager.forget`)."""
        memory_id = check_id(memory_id)
        why = optional_text(reason, "reason")
        replacement = None if replacement_id is None else check_id(replacement_id, "replacement_id")
        if replacement == memory_id:
            raise MemoryValidationError("replacement_id must differ from memory_id")

        self.changes.append(Change(memory_id, "forget", {"reason": why}, requires=replacement))

    def reinforce(
        self, memory_id: str, *, amount: float = 0.1, evidence: str | None = None
    ) -> None:
        """Raise a record's confidence after confirming evidence: ``c + amount * (1 - c)``."""
        self._adjust(memory_id, amount, evidence, up=True)

    def contradict(
        self, memory_id: str, *, amount: float = 0.3, evidence: str | None = None
    ) -> None:
        """Lower a record's confidence after contradicting evidence: ``c * (1 - amount)``."""
        self._adjust(memory_id, amount, evidence, up=False)

    def _adjust(self, memory_id: str, amount: float, evidence: str | None, *, up: bool) -> None:
        memory_id = check_id(memory_id)
        step = check_unit(amount, "amount")
        note = optional_text(evidence, "evidence")
        kind = "reinforce" if up else "contradict"
        self.changes.append(Change(memory_id, kind, {"amount": step, "evidence": note}))


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
