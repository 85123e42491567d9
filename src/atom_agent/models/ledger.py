"""Model calls by what they were for: calls, tokens and seconds per purpose, for one node run.

A callback handler LangChain adds to every model call made while it is set (the same configure
hook as the run's budget, :mod:`atom_agent.budget`): it reads each call's purpose from its
metadata (:mod:`atom_agent.models.purpose`) and times it from start to end. The graph's node
wrapper sets one per node run and adds its rows to the state (``calls``), so run.json and the
report say what each kind of call cost — the first half of "does it earn its place".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage
from langchain_core.tracers.context import register_configure_hook

from atom_agent.models.purpose import call_info
from atom_agent.state import CallRows
from atom_agent.usage import ModelCallHandler

UNSTATED = "other"
"""The purpose of a call made outside :func:`~atom_agent.models.purpose.calling`."""


class CallLedger(ModelCallHandler):
    """Counts the model calls made while it is set, by purpose."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: CallRows = {}
        self._open: dict[UUID, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def started(self, run_id: UUID, metadata: Mapping[str, Any]) -> None:
        """Note the call's purpose and when it started."""
        purpose = call_info(metadata).purpose or UNSTATED
        with self._lock:
            self._open[run_id] = (purpose, time.monotonic())

    def ended(self, run_id: UUID, replies: list[AIMessage], error: BaseException | None) -> None:
        """Count the call, its tokens (a failed call's when it carries its reply), its seconds."""
        with self._lock:
            opened = self._open.pop(run_id, None)
            if opened is None:
                return
            purpose, started = opened
            row = self.rows.setdefault(
                purpose, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0}
            )
            row["calls"] += 1
            row["seconds"] = round(row["seconds"] + time.monotonic() - started, 3)
            for reply in replies:
                if reply.usage_metadata:
                    row["input_tokens"] += reply.usage_metadata["input_tokens"]
                    row["output_tokens"] += reply.usage_metadata["output_tokens"]


_CURRENT: ContextVar[CallLedger | None] = ContextVar("atom_call_ledger", default=None)
register_configure_hook(_CURRENT, inheritable=True)


@contextmanager
def recording(ledger: CallLedger) -> Iterator[CallLedger]:
    """Every model call made inside the block is counted by `ledger`."""
    token = _CURRENT.set(ledger)
    try:
        yield ledger
    finally:
        _CURRENT.reset(token)
