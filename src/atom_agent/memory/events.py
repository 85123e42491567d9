"""Memory telemetry: every operation emits one event through :func:`atom_agent.telemetry.emit`."""

from __future__ import annotations

from typing import Any

from atom_agent.telemetry import emit


def emit_event(event: str, /, **fields: Any) -> None:
    """Emit a memory event; never fails the operation it reports.

    ``langgraph.config.get_stream_writer`` raises ``KeyError`` (not ``RuntimeError``) inside a
    runnable that is not a graph run, e.g. a memory tool invoked directly; the event has already
    been logged by then, so the stream is simply skipped.
    """
    try:
        emit(event, **fields)
    except KeyError:
        pass
