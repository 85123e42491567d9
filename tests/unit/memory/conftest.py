from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext


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
