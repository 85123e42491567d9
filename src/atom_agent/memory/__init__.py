"""Two-tier memory: Chroma-backed long-term records and per-session working memory."""

from __future__ import annotations

from atom_agent.memory.manager import MemoryManager
from atom_agent.memory.records import MemoryRecord, MemoryType, SourceType
from atom_agent.memory.working import WorkingMemory

__all__ = [
    "MemoryManager",
    "MemoryRecord",
    "MemoryType",
    "SourceType",
    "WorkingMemory",
]
