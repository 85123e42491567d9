from __future__ import annotations

import asyncio

import pytest

from atom_agent.models import acall_with_retry, call_with_retry, is_transient


class RateLimitError(Exception):
    """Named like the openai / anthropic SDK class."""


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (StatusError(429), True),
        (StatusError(503), True),
        (StatusError(500), True),
        (StatusError(400), False),
        (StatusError(401), False),
        (TimeoutError("slow"), True),
        (ConnectionResetError("reset"), True),
        (RateLimitError("too many"), True),
        (ValueError("bad schema"), False),
    ],
)
def test_is_transient(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_is_transient_follows_the_cause() -> None:
    try:
        try:
            raise StatusError(502)
        except StatusError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_transient(outer)


def test_retries_transient_errors_then_succeeds() -> None:
    calls: list[int] = []
    sleeps: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise StatusError(429)
        return "ok"

    assert call_with_retry(flaky, retries=3, base_delay_s=0.5, sleep=sleeps.append) == "ok"
    assert len(calls) == 3
    assert len(sleeps) == 2 and all(0 <= s <= 1.0 for s in sleeps)


def test_retries_are_bounded() -> None:
    calls: list[int] = []

    def always() -> None:
        calls.append(1)
        raise StatusError(503)

    with pytest.raises(StatusError):
        call_with_retry(always, retries=2, sleep=lambda _: None)
    assert len(calls) == 3


def test_permanent_errors_are_not_retried() -> None:
    calls: list[int] = []

    def bad() -> None:
        calls.append(1)
        raise StatusError(400)

    with pytest.raises(StatusError):
        call_with_retry(bad, retries=5, sleep=lambda _: None)
    assert len(calls) == 1


def test_async_retry() -> None:
    calls: list[int] = []

    async def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError
        return 7

    assert asyncio.run(acall_with_retry(flaky, retries=1, base_delay_s=0.001)) == 7
    assert len(calls) == 2
