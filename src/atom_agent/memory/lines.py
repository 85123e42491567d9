"""A list of strings kept as one UTF-8 buffer and its offsets until rows are changed or read.

A mirror loaded from a snapshot holds 100k documents, metadata texts and token rows; turning
each into a Python string costs a fresh process a large part of its first recall, and a recall
reads a handful. :class:`Lines` decodes a row when it is read; rows set or appended after
loading live beside the buffer.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")
_NONE = object()


class TextRows(Protocol):
    """Rows of text read by index (a list of strings, or a :class:`Lines` of them)."""

    def __getitem__(self, row: int, /) -> str:
        """The text of row `row`."""

    def __len__(self) -> int:
        """How many rows there are."""


class Lines(Generic[T]):
    """Rows of type `T`; rows never set since loading are decoded from the buffer when read.

    Decoded rows are strings: a :class:`Lines` of another `T` must be read through code that
    accepts the string form (as :class:`~atom_agent.memory.index.Metas` does).
    """

    def __init__(
        self,
        buffer: npt.NDArray[np.uint8] | None = None,
        offsets: npt.NDArray[np.int64] | None = None,
    ) -> None:
        if (buffer is None) != (offsets is None):
            raise ValueError("a buffer needs its offsets")
        self._buffer = buffer if buffer is not None else np.zeros(0, dtype=np.uint8)
        self._offsets = offsets if offsets is not None else np.zeros(1, dtype=np.int64)
        self._base = len(self._offsets) - 1
        if self._base < 0 or (self._base and int(self._offsets[-1]) > len(self._buffer)):
            raise ValueError("offsets run past the buffer")
        self._set: dict[int, T] = {}
        self._tail: list[T] = []

    def __len__(self) -> int:
        return self._base + len(self._tail)

    def __getitem__(self, row: int) -> T:
        if row >= self._base:
            return self._tail[row - self._base]
        found = self._set.get(row, _NONE)
        if found is not _NONE:
            return found  # type: ignore[return-value]
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return self._buffer[start:end].tobytes().decode("utf-8", "surrogatepass")  # type: ignore[return-value]

    def __setitem__(self, row: int, value: T) -> None:
        if row >= self._base:
            self._tail[row - self._base] = value
        else:
            self._set[row] = value

    def append(self, value: T) -> None:
        """Add a row at the end."""
        self._tail.append(value)

    def pack(self, text: Any = None) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Every row as one buffer and its offsets (`text` turns a row into its string form).

        Rows still in the buffer are copied as bytes, without decoding.
        """
        render = text or str
        if not self._set and not self._tail:
            return self._buffer[: int(self._offsets[-1])].copy(), self._offsets.copy()
        chunks: list[bytes] = []
        lengths = np.zeros(len(self) + 1, dtype=np.int64)
        for row in range(len(self)):
            if row < self._base and row not in self._set:
                start, end = int(self._offsets[row]), int(self._offsets[row + 1])
                chunk = self._buffer[start:end].tobytes()
            else:
                chunk = render(self[row]).encode("utf-8", "surrogatepass")
            chunks.append(chunk)
            lengths[row + 1] = len(chunk)
        return np.frombuffer(b"".join(chunks), dtype=np.uint8), np.cumsum(lengths)
