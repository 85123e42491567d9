"""A replay cache of model calls: a re-run that changes no prompt answers them from disk.

An evaluation or a batch re-run after a change that touches no prompt replays every call.
LangChain's own model-call cache interface (:class:`~langchain_core.caches.BaseCache`, looked
up by every chat model before it calls its provider) with one difference from
``SQLiteCache``: calls are keyed by the request *and its occurrence*. The n-th identical
request (same messages, same parameters and temperature) gets the n-th recorded reply, so a
run that samples the same prompt three times replays three different samples, in order,
instead of one sample three times. A changed prompt, parameter or temperature is another
key: it misses and calls the model. Off unless asked for (``--cache FILE``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.load import dumps, loads
from langchain_core.outputs import ChatGeneration, Generation

from atom_agent.errors import ConfigError


class ReplayCache(BaseCache):
    """Model replies recorded in an SQLite file, replayed by request and occurrence.

    Args:
        path: the cache file (created with its folder if missing).

    Attributes:
        hits: calls answered from the file.
        misses: calls that went to the model (and were recorded).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the replay cache {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._pending: dict[str, str] = {}
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _request(prompt: str, llm_string: str) -> str:
        return hashlib.sha256(f"{llm_string}\x1f{_content(prompt)}".encode()).hexdigest()

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Generation] | None:
        """The recorded reply to this occurrence of the request, or None (then recorded)."""
        request = self._request(prompt, llm_string)
        with self._lock:
            n = self._seen.get(request, 0)
            self._seen[request] = n + 1
            key = f"{request}:{n}"
            row = self._db.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                self._pending[request] = key
                return None
            self.hits += 1
        try:
            with warnings.catch_warnings():  # ``loads`` is marked beta; messages only here
                warnings.simplefilter("ignore")
                return [
                    ChatGeneration(message=loads(text, allowed_objects="messages"))
                    for text in _split(row[0])
                ]
        except (ValueError, TypeError, KeyError):
            return None  # an unreadable record is a miss; the fresh reply replaces it

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Generation]) -> None:
        """Records the reply to the occurrence :meth:`lookup` just missed."""
        request = self._request(prompt, llm_string)
        value = "\x1e".join(dumps(getattr(g, "message", None) or g.text) for g in return_val)
        with self._lock:
            key = self._pending.pop(request, None) or f"{request}:{self._seen.get(request, 1) - 1}"
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, value))
            self._db.commit()

    def clear(self, **kwargs: Any) -> None:
        """Forgets every recorded reply."""
        with self._lock:
            self._db.execute("DELETE FROM replies")
            self._db.commit()
            self._seen.clear()

    def close(self) -> None:
        """Closes the file."""
        with self._lock:
            self._db.close()

    def counts(self) -> dict[str, int]:
        """``{"from_cache": hits, "to_model": misses}``, for summaries."""
        return {"from_cache": self.hits, "to_model": self.misses}


_DURATION = re.compile(r" in \d+(?:\.\d+)?s\b|(?<= at )0x[0-9a-fA-F]+")
"""What differs every run in quoted output: test times (``1 passed in 0.02s``) and object
addresses (``<Point object at 0x7f…>``)."""

_BOOKKEEPING = frozenset({"usage_metadata", "response_metadata", "id"})
"""Message fields that say what a call cost or where it came from, not what it asked."""


def _content(prompt: str) -> str:
    """The serialized messages without their bookkeeping fields, test durations and addresses.

    A replayed reply comes back with its cost zeroed (LangChain marks cache hits so); the
    next request quotes that reply, and must still be the request that was recorded.
    """
    try:
        data = json.loads(prompt)
    except ValueError:
        return _DURATION.sub("", prompt)
    return _DURATION.sub("", json.dumps(_strip(data), sort_keys=True))


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _BOOKKEEPING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _split(value: str) -> list[str]:
    return [part for part in value.split("\x1e") if part]
