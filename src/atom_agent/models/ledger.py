"""Model calls by what they were for: calls, tokens, seconds and cap hits per purpose.

For one node run.

A callback handler LangChain adds to every model call made while it is set (the same configure
hook as the run's budget, :mod:`atom_agent.budget`): it reads each call's purpose from its
metadata (:mod:`atom_agent.models.purpose`) and times it from start to end. The graph's node
wrapper sets one per node run and adds its rows to the state (``calls``), so run.json and the
report say what each kind of call cost — the first half of "does it earn its place". A call
that ran to its ``max_tokens`` is counted as a cap hit (``capped``): a reply that ends where
its content ends is the norm, one cut by its cap was paid for in full and may say less.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tracers.context import register_configure_hook

from atom_agent.models.purpose import call_info
from atom_agent.state import CallRows
from atom_agent.usage import ModelCallHandler

UNSTATED = "other"
"""The purpose of a call made outside :func:`~atom_agent.models.purpose.calling`."""

CAP_FINISHES = frozenset({"length", "max_tokens", "MAX_TOKENS"})
"""Finish reasons that mean "ran to max_tokens": OpenAI-compatible servers and llama.cpp
(``length``), Anthropic's ``stop_reason`` (``max_tokens``), Gemini (``MAX_TOKENS``)."""


def hit_cap(reply: AIMessage, max_tokens: int | None = None) -> bool:
    """Whether `reply` ended on its token cap: its finish reason says so, or it used all of it.

    `max_tokens`: the call's cap when its request stated one (a provider that reports no
    finish reason is read from its completion tokens).
    """
    meta = reply.response_metadata or {}
    finish = meta.get("finish_reason") or meta.get("stop_reason")
    if finish is not None:
        return str(finish) in CAP_FINISHES
    used = reply.usage_metadata["output_tokens"] if reply.usage_metadata else 0
    return bool(max_tokens) and used >= int(max_tokens or 0)


class CallLedger(ModelCallHandler):
    """Counts the model calls made while it is set, by purpose."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: CallRows = {}
        self._open: dict[UUID, tuple[str, float]] = {}
        self._caps: dict[UUID, int] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Note the call's ``max_tokens`` when its request states one, then start it."""
        asked = (kwargs.get("invocation_params") or {}).get("max_tokens")
        if isinstance(asked, int) and asked > 0:
            with self._lock:
                self._caps[run_id] = asked
        super().on_chat_model_start(
            serialized, messages, run_id=run_id, metadata=metadata, **kwargs
        )

    def started(self, run_id: UUID, metadata: Mapping[str, Any]) -> None:
        """Note the call's purpose and when it started."""
        purpose = call_info(metadata).purpose or UNSTATED
        with self._lock:
            self._open[run_id] = (purpose, time.monotonic())

    def ended(self, run_id: UUID, replies: list[AIMessage], error: BaseException | None) -> None:
        """Count the call: its tokens (a failed call's too), seconds, and whether it hit its cap."""
        with self._lock:
            opened = self._open.pop(run_id, None)
            cap = self._caps.pop(run_id, None)
            if opened is None:
                return
            purpose, started = opened
            row = self.rows.setdefault(
                purpose,
                {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0, "capped": 0},
            )
            row["calls"] += 1
            row["capped"] = row.get("capped", 0) + any(hit_cap(r, cap) for r in replies)
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
