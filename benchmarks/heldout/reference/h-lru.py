"""Reference for h-lru: a fixed-capacity cache evicting the least recently used key."""

from collections import OrderedDict
from typing import Any


class LRUCache:
    """At most capacity pairs, kept in order from least to most recently used."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self._capacity = capacity
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any, default: Any = None) -> Any:
        """The stored value, now most recently used; default (nothing changed) if absent."""
        if key not in self._data:
            return default
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key: Any, value: Any) -> None:
        """Store value as the most recently used, evicting the oldest key for a new one if full."""
        if key not in self._data and len(self._data) >= self._capacity:
            self._data.popitem(last=False)
        self._data[key] = value
        self._data.move_to_end(key)

    def peek(self, key: Any) -> Any:
        """The stored value, recency unchanged; KeyError if absent."""
        return self._data[key]

    def keys(self) -> list[Any]:
        """Stored keys from least to most recently used."""
        return list(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data
