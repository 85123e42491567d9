"""Memory telemetry: every operation emits one event through :func:`atom_agent.telemetry.emit`."""

from __future__ import annotations

from typing import Any

from atom_agent.telemetry import emit


def emit_event(event: str, /, **fields: Any) -> None:
    """Emit a memory event (logging, and the graph's custom stream inside a run)."""
    emit(event, **fields)
