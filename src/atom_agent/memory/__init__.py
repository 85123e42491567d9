"""Two-tier memory: Chroma-backed long-term records and per-session working memory.

The names below are loaded on first use (PEP 562): importing a light submodule
(``atom_agent.memory.records``, ``.rules``) does not load Chroma and its embedder, which take
about a second, so a command that needs neither (``atom-agent --help``) starts at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atom_agent.lazy import lazy_names

if TYPE_CHECKING:
    from atom_agent.memory.manager import MemoryManager
    from atom_agent.memory.records import MemoryRecord, MemoryType, SourceType
    from atom_agent.memory.working import WorkingMemory

_WHERE = {
    "MemoryManager": "atom_agent.memory.manager",
    "MemoryRecord": "atom_agent.memory.records",
    "MemoryType": "atom_agent.memory.records",
    "SourceType": "atom_agent.memory.records",
    "WorkingMemory": "atom_agent.memory.working",
}

__all__ = [
    "MemoryManager",
    "MemoryRecord",
    "MemoryType",
    "SourceType",
    "WorkingMemory",
]


__getattr__ = lazy_names(__name__, _WHERE)
