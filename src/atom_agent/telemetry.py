"""Telemetry events: Python logging plus, inside a graph, LangGraph's custom stream."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.config import get_stream_writer

logger = logging.getLogger("atom_agent.events")


def emit(event: str, /, **fields: Any) -> dict[str, Any]:
    """Emit `event` with JSON-serialisable `fields`; returns the payload.

    Inside a LangGraph node or tool the payload is written to the ``custom`` stream mode
    (``graph.stream(..., stream_mode="custom")``); outside one only logging sees it.
    """
    payload: dict[str, Any] = {"event": event, **fields}
    logger.info("%s %s", event, fields)
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):
        # Outside a graph run: RuntimeError outside any runnable context, KeyError inside a
        # runnable that is not a graph (a tool invoked directly). Logging is the only sink.
        return payload
    writer(payload)
    return payload
