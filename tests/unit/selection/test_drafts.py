"""Drafts: the temperatures each attempt samples at."""

from __future__ import annotations

from atom_agent.selection.drafts import temperatures


def test_each_attempt_starts_warmer() -> None:
    assert temperatures((0.4, 0.8), 1) == [0.0, 0.4, 0.8]
    assert temperatures((0.4, 0.8), 2) == [0.2, 0.6, 1.0]
    assert temperatures((0.4, 0.8), 5) == [0.8, 1.2, 1.2]
