"""Two-tier memory: Chroma-backed long-term records and per-session working memory."""

from __future__ import annotations

from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import MemoryRecord, MemoryType, SourceType
from atom_agent.memory.working import Candidate, WorkingMemory

__all__ = [
    "Candidate",
    "MemoryManager",
    "MemoryRecord",
    "MemoryType",
    "SourceType",
    "WorkingMemory",
]
