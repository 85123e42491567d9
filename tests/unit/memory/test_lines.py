"""Lines: rows decoded from one buffer on demand; set and appended rows kept beside it."""

from __future__ import annotations

import numpy as np
import pytest

from atom_agent.memory.lexical import LexicalIndex
from atom_agent.memory.lines import Lines

ROWS = ["plain", "", "two\nlines", "ünïcödé 文字", "tab\tand \\ backslash", "\ud800 lone surrogate"]


def test_rows_round_trip_through_the_buffer() -> None:
    held: Lines[str] = Lines()
    for row in ROWS:
        held.append(row)
    lines: Lines[str] = Lines(*held.pack())
    assert len(lines) == len(ROWS) and list(lines) == ROWS
    lines[1] = "changed"
    lines.append("added")
    assert lines[1] == "changed" and lines[len(ROWS)] == "added"
    again: Lines[str] = Lines(*lines.pack())
    assert list(again) == ["plain", "changed", *ROWS[2:], "added"]
    with pytest.raises(IndexError):
        lines[len(lines)]


def test_a_buffer_its_offsets_overrun_is_refused() -> None:
    with pytest.raises(ValueError, match="past the buffer"):
        Lines(np.frombuffer(b"abc", dtype=np.uint8), np.array([0, 2, 9], dtype=np.int64))
    with pytest.raises(ValueError, match="needs its offsets"):
        Lines(np.frombuffer(b"abc", dtype=np.uint8))


def test_the_delta_postings_travel_with_the_state() -> None:
    # A restored index scores its delta like the live one without tokenising it again.
    docs = [f"record {i} about the cache and widget_{i % 7}" for i in range(40)]
    live = LexicalIndex()
    live.grow(40)
    live.rebuild(docs)
    docs += ["the parse_config_v2 helper fails on empty files", "cache widget_3 again"]
    live.changed(40)
    live.changed(41)
    live.changed(2)  # a base row changed: stale in the base, scored in the delta
    docs[2] = "record 2 now mentions parse_config_v2"
    query = ["parse_config_v2", "cache", "widget_3"]
    arrays, fields = live.state(docs)
    restored = LexicalIndex.restore(arrays, fields)
    assert restored._posted == {2, 40, 41}
    untouched = ["never read"] * len(docs)  # the docs are not read to score
    assert np.array_equal(restored.scores(untouched, query, 42), live.scores(docs, query, 42))
