"""A project's standing rules in memory: remembered as user conventions, superseded, carried.

A user states once how the project does things, in a task, an answer, ``atom-agent memory
add`` or a repository's ``AGENTS.md`` / ``CONVENTIONS.md`` (:func:`atom_agent.rule_text.find_rules`
reads them). Each rule becomes a ``convention`` memory with source ``user``, the run it came
from and the user's words; a rule that changes an earlier one supersedes it (a soft delete with
provenance). A run carries the rules in force in its task text
(:func:`atom_agent.rule_text.with_rules`), so every call that sees the task (the plain answer,
the plan, drafts, witnesses, contracts, the tool loop, project edits) sees them, and the task's
clause machinery turns the rules it can execute into checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import MemoryRecord, MemoryType, SourceType
from atom_agent.rule_text import (
    RULES_HEADER,
    Retraction,
    Statement,
    norm_words,
)
from atom_agent.session import SessionContext

MAX_RULES = 40
"""Most rules in force a run reads (newest first); a project with more states them in a file."""

# --- the rules in force -------------------------------------------------------------------------


def is_rule(record: MemoryRecord) -> bool:
    """Whether `record` is a project rule: a convention its user stated (in force or not)."""
    return record.type is MemoryType.CONVENTION and record.source_type is SourceType.USER


def in_force(memory: MemoryManager, session: SessionContext) -> list[MemoryRecord]:
    """The project's rules in force: user conventions never superseded, oldest first."""
    found = memory.recall(session, None, type=MemoryType.CONVENTION, min_confidence=0.0,
                          limit=MAX_RULES)  # fmt: skip
    rules = [r for r in found if is_rule(r) and not r.superseded]
    return sorted(rules, key=lambda r: (r.created_at, r.id))


_norm = norm_words


def _most_similar(
    memory: MemoryManager, rule: str, candidates: list[MemoryRecord]
) -> MemoryRecord | None:
    """The candidate that `rule` most plausibly changes (semantic and word overlap), if any."""
    if not candidates:
        return None
    vectors = memory.embedder.embed([rule, *(c.content for c in candidates)])
    new, old = np.asarray(vectors[0]), np.asarray(vectors[1:])
    norms = np.linalg.norm(old, axis=1) * (np.linalg.norm(new) or 1.0)
    cosine = (old @ new) / np.where(norms == 0, 1.0, norms)
    words = set(_norm(rule).split()) - _STOP
    overlap = [len(words & (set(_norm(c.content).split()) - _STOP)) / (len(words) or 1)
               for c in candidates]  # fmt: skip
    scores = [0.7 * float(c) + 0.3 * o for c, o in zip(cosine, overlap, strict=True)]
    best = int(np.argmax(scores))
    return candidates[best] if scores[best] >= SUPERSEDE_THRESHOLD else None


SUPERSEDE_THRESHOLD = 0.35
"""Least similarity at which a changing rule supersedes an earlier one (else it only adds)."""

_STOP = frozenset(
    "a an the and or of to in on for is are be it its their this that from now on no longer "
    "every each all any with by as at which whose instead rule rules project".split()
)


@dataclass
class Recorded:
    """What one text's rules did to the project's memory."""

    written: list[MemoryRecord] = field(default_factory=list)
    superseded: list[tuple[str, str | None]] = field(default_factory=list)
    """(old id, replacement id or None) for each rule this text changed or withdrew."""
    unchanged: list[str] = field(default_factory=list)
    """Rules stated again word for word: nothing written."""


def record_rules(
    memory: MemoryManager,
    session: SessionContext,
    statements: Iterable[Statement],
    *,
    origin: str,
    type: MemoryType = MemoryType.CONVENTION,
) -> Recorded:
    """Store the stated rules as user conventions; a changing rule supersedes the one it changes.

    Idempotent per origin: a rule's id is made from the session's run, the origin and its words,
    so a node re-run after a crash (or the same file read by a later run) writes nothing twice.

    Args:
        memory: the long-term memory.
        session: the run's (or the CLI's) session; its run id is the rules' provenance.
        statements: what :func:`find_rules` found.
        origin: where the words came from ("task", "answer", "AGENTS.md", "cli").
        type: the memory type (``convention`` unless the user said otherwise).
    """
    out = Recorded()
    force = in_force(memory, session)
    known = {_norm(r.content): r for r in force}
    retired: MemoryRecord | None = None
    for st in statements:
        if isinstance(st, Retraction):
            retired = _most_similar(memory, st.text, force)
            if retired is not None:
                memory.forget(session, retired.id, reason=f"{origin}: {st.text}")
                out.superseded.append((retired.id, None))
                force = [r for r in force if r.id != retired.id]
            continue
        if _norm(st.text) in known:
            out.unchanged.append(known[_norm(st.text)].id)
            continue
        old = retired if st.changes and retired is not None else None
        if old is None and st.changes:
            old = _most_similar(memory, st.text, force)
        record = _remember(memory, session, st.text, origin=origin, type=type)
        out.written.append(record)
        known[_norm(st.text)] = record
        if old is not None:
            _link(memory, session, old, record, origin)
            out.superseded = [(o, r) for o, r in out.superseded if o != old.id]
            out.superseded.append((old.id, record.id))
            force = [r for r in force if r.id != old.id]
            retired = None
        force.append(record)
    return out


def _remember(
    memory: MemoryManager, session: SessionContext, text: str, *, origin: str, type: MemoryType
) -> MemoryRecord:
    key = hashlib.sha256(f"{session.run_id}|{origin}|{text}".encode()).hexdigest()[:24]
    return memory.remember_many(
        session,
        [
            {
                "id": f"rule-{key}",
                "content": text,
                "type": type,
                "confidence": 1.0,
                "source_type": SourceType.USER,
                "rationale": f"stated by the user ({origin})",
                "importance": 1.0,
            }
        ],
        _event="memory.rule",
    )[0]


def _link(
    memory: MemoryManager,
    session: SessionContext,
    old: MemoryRecord,
    new: MemoryRecord,
    origin: str,
) -> None:
    """Point an earlier rule at the one that changes it (soft delete, provenance kept)."""
    current = memory.get(session, old.id)
    if current.superseded and current.superseded_by:
        return
    if current.superseded:  # withdrawn earlier in this text: name its replacement now
        memory.forget(session, old.id, reason=current.supersede_reason, replacement_id=new.id)
        return
    memory.forget(session, old.id, reason=f"changed by the user ({origin})", replacement_id=new.id)


# --- carrying the rules in a run's task text ----------------------------------------------------


def rules_block(rules: Iterable[MemoryRecord], budget_tokens: int) -> tuple[str, list[str]]:
    """The rules as a compact block within `budget_tokens` (newest kept first), and their ids.

    Never a duplicate: rules whose words are the same are carried once.
    """
    chosen: list[MemoryRecord] = []
    seen: set[str] = set()
    spent = len(RULES_HEADER) // 4
    for rule in sorted(rules, key=lambda r: r.created_at, reverse=True):
        key = _norm(rule.content)
        cost = len(rule.content) // 4 + 2
        if key in seen or spent + cost > budget_tokens:
            continue
        seen.add(key)
        chosen.append(rule)
        spent += cost
    chosen.sort(key=lambda r: (r.created_at, r.id))
    if not chosen:
        return "", []
    lines = "\n".join(f"- {' '.join(r.content.split())}" for r in chosen)  # one line each
    return f"{RULES_HEADER}\n{lines}", [r.id for r in chosen]
