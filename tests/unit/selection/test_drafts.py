"""Drafts: the temperatures each attempt samples at, and a retry's."""

from __future__ import annotations

from atom_agent.selection.drafts import retry_temperatures, temperatures


def test_each_attempt_starts_warmer() -> None:
    assert temperatures((0.4, 0.8), 1) == [0.0, 0.4, 0.8]
    assert temperatures((0.4, 0.8), 2) == [0.2, 0.6, 1.0]
    assert temperatures((0.4, 0.8), 5) == [0.8, 1.2, 1.2]


def test_a_retry_that_keeps_the_previous_choice_asks_greedy_first() -> None:
    assert retry_temperatures([0.2, 0.6, 1.0], keeps_previous=True) == [0.0, 0.6]
    assert retry_temperatures([0.2, 0.6, 1.0], keeps_previous=False) == [0.2, 0.6, 1.0]
    assert retry_temperatures([0.2], keeps_previous=True) == [0.2]
