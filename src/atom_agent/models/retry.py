"""Transient model errors (429, 5xx, timeouts) and a bounded retry with exponential backoff."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
# Provider SDK exception class names that mean "try again" (matched by name so that no
# provider package has to be importable here).
_TRANSIENT_NAMES = frozenset(
    {
        "RateLimitError", "APITimeoutError", "APIConnectionError", "InternalServerError",
        "ServiceUnavailable", "ServiceUnavailableError", "ResourceExhausted", "DeadlineExceeded",
        "TooManyRequests", "OverloadedError", "TimeoutException", "ConnectError", "ReadTimeout",
        "ConnectTimeout", "RemoteProtocolError",
    }
)  # fmt: skip


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is worth retrying: rate limits, 5xx, timeouts, resets."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError | ConnectionError):
            return True
        status = _status(current)
        if status is not None:
            return status in TRANSIENT_STATUS
        if any(cls.__name__ in _TRANSIENT_NAMES for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def backoff_delay(attempt: int, base_s: float, max_s: float) -> float:
    """Full-jitter exponential backoff for retry number `attempt` (1-based)."""
    return random.uniform(0, min(max_s, base_s * 2 ** (attempt - 1)))


def _retry_delay(
    exc: BaseException,
    attempt: int,
    retries: int,
    base_s: float,
    max_s: float,
    retry_on: Callable[[BaseException], bool],
) -> float | None:
    """The wait before retry `attempt` of `exc`, or None when it must propagate."""
    if attempt > retries or not retry_on(exc):
        return None
    delay = backoff_delay(attempt, base_s, max_s)
    logger.warning("transient model error (%s); retry %d/%d in %.1fs", exc, attempt, retries, delay)
    return delay


def call_with_retry(
    fn: Callable[[], T],
    *,
    retries: int = 3,
    base_delay_s: float = 1.0,
    max_delay_s: float = 30.0,
    retry_on: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call `fn`, retrying at most `retries` times on errors `retry_on` accepts.

    Non-transient errors propagate at once; the last transient error propagates after the
    final retry.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            attempt += 1
            delay = _retry_delay(exc, attempt, retries, base_delay_s, max_delay_s, retry_on)
            if delay is None:
                raise
            sleep(delay)


async def acall_with_retry(
    fn: Callable[[], Awaitable[T]],
    *,
    retries: int = 3,
    base_delay_s: float = 1.0,
    max_delay_s: float = 30.0,
    retry_on: Callable[[BaseException], bool] = is_transient,
) -> T:
    """Async :func:`call_with_retry`."""
    attempt = 0
    while True:
        try:
            return await fn()
        except Exception as exc:
            attempt += 1
            delay = _retry_delay(exc, attempt, retries, base_delay_s, max_delay_s, retry_on)
            if delay is None:
                raise
            await asyncio.sleep(delay)
