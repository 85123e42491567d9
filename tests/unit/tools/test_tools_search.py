"""search_files over the scope; search_memory against the real MemoryManager and the protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from atom_agent.errors import MissingSessionError, ToolConfigError
from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolContext
from atom_agent.tools.scope import ToolScope
from atom_agent.tools.search import SEARCH_TOOLS

Call = Callable[..., tuple[str, dict[str, Any]]]
ByName = Callable[[list[BaseTool]], dict[str, BaseTool]]


@pytest.fixture
def files(area: dict[str, Path]) -> dict[str, Path]:
    staging = area["staging"]
    (staging / "impl.py").write_text(
        "class LRUCache:\n    def get(self, key):\n        return self.data.get(key)\n"
    )
    (staging / "pkg").mkdir()
    (staging / "pkg" / "util.py").write_text("def helper():\n    return 'get me'\n")
    (staging / "blob.bin").write_bytes(b"\x00get\x00" * 10)
    return area


def test_literal_search_reports_file_and_line(
    scope: ToolScope, files: dict[str, Path], call: Call, by_name: ByName
) -> None:
    tool = by_name(list(SEARCH_TOOLS))["search_files"]
    status, out = call(tool, pattern="get(")
    assert status == "success"
    assert out["matches"] == [
        "impl.py:2:     def get(self, key):",
        "impl.py:3:         return self.data.get(key)",
    ]
    _, out = call(tool, pattern="return")
    assert "deps/base/base.py:2:     return 'base'" in out["matches"]
    assert "pkg/util.py:2:     return 'get me'" in out["matches"]
    assert all("blob.bin" not in m for m in out["matches"])  # binary files are skipped
    _, out = call(tool, pattern="RETURN", ignore_case=True, path="deps")
    assert out["matches"] == ["deps/base/base.py:2:     return 'base'"]
    _, out = call(tool, pattern="return", path="pkg")
    assert out["count"] == 1


def test_regex_search_and_bad_regex(
    scope: ToolScope, files: dict[str, Path], call: Call, by_name: ByName
) -> None:
    tool = by_name(list(SEARCH_TOOLS))["search_files"]
    _, out = call(tool, pattern=r"^\s+def \w+\(self", regex=True)
    assert out["matches"] == ["impl.py:2:     def get(self, key):"]
    status, out = call(tool, pattern="get(", regex=True)
    assert status == "error" and "invalid regular expression" in out["error"]
    assert "regex=false" in out["error"]
    status, out = call(tool, pattern="x", path="../outside")
    assert status == "error" and "'..'" in out["error"]
    status, out = call(tool, pattern="")
    assert status == "error"


def test_results_are_capped(
    scope: ToolScope, area: dict[str, Path], call: Call, by_name: ByName
) -> None:
    (area["staging"] / "many.txt").write_text("hit\n" * 500)
    tool = by_name(list(SEARCH_TOOLS))["search_files"]
    _, out = call(tool, ToolContext(scope=scope, max_search_results=10), pattern="hit")
    assert out["count"] == 500 and len(out["matches"]) == 10
    assert "showing 10 of 500" in out["note"]


@dataclass
class Record:
    id: str
    content: str
    type: str
    confidence: float
    created_at: datetime = field(default_factory=lambda: datetime(2026, 1, 2, tzinfo=UTC))


@dataclass
class KeywordMemory:
    """A stand-in for MemoryManager.recall (word overlap ranking)."""

    records: list[Record]
    calls: list[tuple[SessionContext, str | None, str, int]] = field(default_factory=list)

    def recall(
        self,
        session: SessionContext,
        query: str | None = None,
        *,
        type: str = "all",
        min_confidence: float = 0.5,
        limit: int = 10,
        include_superseded: bool = False,
    ) -> Sequence[Record]:
        self.calls.append((session, query, type, limit))
        words = set((query or "").lower().split())
        hits = [
            r
            for r in self.records
            if r.confidence >= min_confidence
            and (type == "all" or r.type == type)
            and words & set(r.content.lower().split())
        ]
        return hits[:limit]


def test_search_memory_reads_what_recall_returns(
    scope: ToolScope, session: SessionContext, call: Call, by_name: ByName
) -> None:
    memory = KeywordMemory(
        [
            Record("m1", "tests use pytest fixtures", "convention", 0.9),
            Record("m2", "cache eviction is LRU", "decision", 0.8),
        ]
    )
    tool = by_name(list(SEARCH_TOOLS))["search_memory"]
    context = ToolContext(scope=scope, session=session, memory=memory)
    status, out = call(tool, context, query="which pytest style", type="convention", limit=3)
    assert status == "success"
    assert out == {
        "query": "which pytest style",
        "count": 1,
        "memories": [
            {
                "id": "m1",
                "content": "tests use pytest fixtures",
                "type": "convention",
                "confidence": 0.9,
                "created_at": "2026-01-02T00:00:00+00:00",
            }
        ],
    }
    assert memory.calls == [(session, "which pytest style", "convention", 3)]
    status, out = call(tool, context, query="x", limit=99)
    assert status == "error" and "limit" in out["error"]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager.open(tmp_path / "ws") as memory:
        yield memory


def test_search_memory_with_the_real_memory_manager(
    scope: ToolScope, session: SessionContext, manager: MemoryManager, call: Call, by_name: ByName
) -> None:
    manager.remember(
        session,
        "The project uses pytest and plain assert statements",
        type="convention",
        confidence=0.9,
    )
    manager.remember(
        session,
        "The LRU cache must evict the least recently used key",
        type="decision",
        confidence=0.8,
    )
    other = SessionContext(session_id="s9", project_id="other-project")
    manager.remember(other, "Other project: tests use unittest", type="convention")
    tool = by_name(list(SEARCH_TOOLS))["search_memory"]
    context = ToolContext(scope=scope, session=session, memory=manager)
    status, out = call(tool, context, query="which test framework do we use?")
    assert status == "success" and out["count"] >= 1
    assert out["memories"][0]["content"].startswith("The project uses pytest")
    assert all("Other project" not in m["content"] for m in out["memories"])  # isolation
    _, out = call(tool, context, query="eviction policy of the cache", type="decision")
    assert [m["type"] for m in out["memories"]] == ["decision"]


def test_tools_without_what_they_need_are_wiring_errors(
    scope: ToolScope, session: SessionContext, call: Call, by_name: ByName
) -> None:
    assert [t.name for t in SEARCH_TOOLS] == ["search_files", "search_memory"]
    tools = by_name(list(SEARCH_TOOLS))
    with pytest.raises(ToolConfigError, match="memory="):
        call(tools["search_memory"], ToolContext(scope=scope, session=session), query="q")
    with pytest.raises(MissingSessionError, match="needs a session context"):
        call(tools["search_memory"], ToolContext(scope=scope, memory=KeywordMemory([])), query="q")
