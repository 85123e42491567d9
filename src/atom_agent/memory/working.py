"""Short-term working memory: one session's pending memory candidates, scored by importance."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace

from atom_agent.memory.records import (
    MemoryType,
    clamp_unit,
    validate_content,
    validate_type,
)
from atom_agent.session import SessionContext

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """Something the system noticed that may deserve long-term memory."""

    key: str
    content: str
    type: MemoryType
    importance: float
    occurrences: int = 1


class WorkingMemory:
    """Pending candidates of one session, merged by content.

    Seeing the same candidate again raises its importance (a failure seen twice matters more
    than one seen once): the combined importance is ``1 - (1 - a)(1 - b)``. Promotion into
    long-term memory is :func:`~atom_agent.memory.learning.promote_once`; the agent's own
    `remember` skips this tier.
    """

    def __init__(self, session: SessionContext) -> None:
        self.session = session
        self._candidates: dict[str, Candidate] = {}
        self._lock = threading.Lock()

    def note(
        self,
        content: str,
        *,
        type: MemoryType | str = MemoryType.LESSON_LEARNED,
        importance: float = 0.4,
    ) -> Candidate:
        """Add a candidate, or reinforce the same one seen before; returns its current state."""
        text = validate_content(content)
        kind = MemoryType(validate_type(type))
        weight = clamp_unit(importance, "importance")
        key = _SPACE.sub(" ", text.lower())
        with self._lock:
            seen = self._candidates.get(key)
            if seen is None:
                current = Candidate(key=key, content=text, type=kind, importance=weight)
            else:
                current = replace(
                    seen,
                    importance=1.0 - (1.0 - seen.importance) * (1.0 - weight),
                    occurrences=seen.occurrences + 1,
                )
            self._candidates[key] = current
            return current

    def candidates(self) -> list[Candidate]:
        """Every pending candidate, most important first."""
        with self._lock:
            return sorted(self._candidates.values(), key=lambda c: c.importance, reverse=True)

    def above(self, threshold: float) -> list[Candidate]:
        """Candidates whose importance is at or above `threshold`."""
        return [c for c in self.candidates() if c.importance >= threshold]
