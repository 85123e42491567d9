from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from tests.unit.tools.running import tool_runtime

from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolContext
from atom_agent.tools.memory import MEMORY_TOOLS


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager.open(tmp_path / "ws") as memory:
        yield memory


@pytest.fixture
def session() -> SessionContext:
    return SessionContext(
        session_id="s1", project_id="alpha", run_id="r1", step_id="step-1", attempt=1
    )


@pytest.fixture
def other() -> SessionContext:
    return SessionContext(session_id="s2", project_id="beta")


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, object]]]:
    """Telemetry events logged by atom_agent.telemetry.emit, as (event, fields)."""
    caplog.set_level(logging.INFO, logger="atom_agent.events")

    class _Events(list[tuple[str, dict[str, object]]]):
        def named(self, name: str) -> list[dict[str, object]]:
            return [
                r.args[1]
                for r in caplog.records
                if r.name == "atom_agent.events" and r.args[0] == name
            ]  # type: ignore[index]

    return _Events()


class InRun:
    """A plain memory tool invoked as an agent's tool node would, in a run with `context`."""

    def __init__(self, tool: BaseTool, context: ToolContext) -> None:
        self.tool, self.context, self.name = tool, context, tool.name

    def invoke(self, args: dict[str, Any]) -> Any:
        return self.tool.invoke({**args, "runtime": tool_runtime(self.context)})


def in_run(manager: MemoryManager, session: SessionContext | None) -> list[InRun]:
    """remember, recall and forget in a run acting for `session` on `manager`."""
    context = ToolContext(session=session, memory=manager)
    return [InRun(tool, context) for tool in MEMORY_TOOLS]


@pytest.fixture
def memory_tools() -> Callable[[MemoryManager, SessionContext | None], list[InRun]]:
    """:func:`in_run`: the memory tools as a run's agent calls them."""
    return in_run
