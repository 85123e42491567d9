"""Reference for h-bucket: a token-bucket rate limiter reading an injected clock."""

import time
from collections.abc import Callable


class TokenBucket:
    """At most capacity tokens, refilled at rate tokens per second of clock time."""

    def __init__(
        self, capacity: int, rate: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        if rate <= 0:
            raise ValueError(f"rate must be positive, not {rate}")
        self._capacity = capacity
        self._rate = rate
        self._clock = clock
        self._tokens = float(capacity)
        self._last = clock()

    def _refill(self) -> None:
        """Add the tokens gained since the previous reading (none if the clock went back)."""
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self._capacity), self._tokens + elapsed * self._rate)

    def try_acquire(self, tokens: int = 1) -> bool:
        """Take tokens if that many are held; False (taking none) if not."""
        if tokens < 1 or tokens > self._capacity:
            raise ValueError(f"tokens must be between 1 and {self._capacity}, not {tokens}")
        self._refill()
        if self._tokens < tokens:
            return False
        self._tokens -= tokens
        return True

    def available(self) -> float:
        """Tokens held now, fractions included."""
        self._refill()
        return self._tokens
