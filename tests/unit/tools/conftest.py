from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from tests.unit.tools.running import tool_runtime

from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolContext
from atom_agent.tools.scope import ToolScope

Call = Callable[..., tuple[str, dict[str, Any]]]


@pytest.fixture
def area(tmp_path: Path) -> dict[str, Path]:
    """A staging area, one dependency's artifacts, and a directory outside both."""
    staging = tmp_path / "attempt" / "staging"
    dep = tmp_path / "dep" / "artifacts"
    outside = tmp_path / "outside"
    for path in (staging, dep, outside):
        path.mkdir(parents=True)
    (dep / "base.py").write_text("def base():\n    return 'base'\n")
    (outside / "secret.txt").write_text("TOP SECRET\n")
    return {"staging": staging, "dep": dep, "outside": outside}


@pytest.fixture
def scope(area: dict[str, Path]) -> ToolScope:
    return ToolScope(
        staging=area["staging"],
        dependencies={"base": area["dep"]},
        max_write_bytes=4096,
        max_read_bytes=2048,
        max_list_entries=50,
    )


@pytest.fixture
def session() -> SessionContext:
    return SessionContext(
        session_id="sess-1", project_id="proj", run_id="r1", step_id="s1", attempt=1
    )


@pytest.fixture
def context(scope: ToolScope, session: SessionContext) -> ToolContext:
    """The run context the tools read: the scope and session above (no sandbox, no memory)."""
    return ToolContext(session=session, scope=scope)


@pytest.fixture
def call(context: ToolContext) -> Call:
    """Invoke a tool as an agent would (a ToolCall with the run's runtime injected).

    Returns (status, parsed JSON content); ``_context=`` runs it in another run's context.
    """

    def invoke(
        tool: BaseTool, _context: ToolContext | None = None, **args: Any
    ) -> tuple[str, dict[str, Any]]:
        injected = tool_runtime(_context or context, "call-1")
        message = tool.invoke(
            {
                "type": "tool_call",
                "name": tool.name,
                "args": {**args, "runtime": injected},
                "id": "call-1",
            }
        )
        assert isinstance(message, ToolMessage)
        assert isinstance(message.content, str)
        return message.status, json.loads(message.content)

    return invoke


@pytest.fixture
def by_name() -> Callable[[list[BaseTool]], dict[str, BaseTool]]:
    return lambda tools: {t.name: t for t in tools}


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> Callable[[], list[tuple[str, dict[str, Any]]]]:
    """Telemetry events logged by atom_agent.telemetry.emit so far, as (event, fields)."""
    caplog.set_level(logging.INFO, logger="atom_agent.events")

    def recorded() -> list[tuple[str, dict[str, Any]]]:
        return [
            (r.args[0], r.args[1])
            for r in caplog.records  # type: ignore[index,misc]
            if r.name == "atom_agent.events"
        ]

    return recorded
