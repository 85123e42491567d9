"""Idempotent memory writes: one record per (run, step, attempt, kind), however often a node runs.

A graph node that crashes (or is killed) after a memory write but before its checkpoint is saved
runs again on resume. Its writes carry a deterministic id derived from where they were made, so
the second run finds the record and writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import MemoryRecord
from atom_agent.session import SessionContext


def memory_key(session: SessionContext, kind: str) -> str:
    """The deterministic id of the `kind` write made under `session` (run, step, attempt)."""
    parts = (
        session.project_id,
        session.run_id or session.session_id,
        session.step_id or "",
        str(session.attempt or 0),
        kind,
    )
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return "k" + digest[:31]


def remember_once(
    memory: MemoryManager, session: SessionContext, kind: str, item: Mapping[str, Any]
) -> MemoryRecord:
    """Store `item` (``remember`` keyword arguments) under the id of (session, kind), once.

    When a record with that id exists (superseded ones included) it is returned unchanged.

    Raises:
        MemoryValidationError: the item is not a valid memory.
    """
    changes = MemoryChanges(session)
    record = add_once(changes, kind, item)
    return memory.apply(changes).records[record.id]


def add_once(changes: MemoryChanges, kind: str, item: Mapping[str, Any]) -> MemoryRecord:
    """Add `item` to `changes` under the id of (its session, kind), kept if it exists already.

    Raises:
        MemoryValidationError: the item is not a valid memory.
    """
    return changes.remember({**item, "id": memory_key(changes.session, kind)}, once=True)
