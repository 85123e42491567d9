"""The executor's steering: one middleware per behaviour, composed from the model profile."""

from __future__ import annotations

from atom_agent.models.profiles import SMALL, STANDARD
from atom_agent.nodes.executor.steering import steering
from atom_agent.nodes.executor.steering.reask import Reask
from atom_agent.nodes.executor.steering.require_files import RequireFiles

SHARED = ["SalvageNote", "ExamplesNote", "Reask", "ContextWindow", "SalvageWrite"]


def test_the_middlewares_and_their_order_come_from_the_profile() -> None:
    small, standard = steering(SMALL), steering(STANDARD)
    # Outermost first: request edits in this order, replies seen innermost first.
    assert [m.name for m in small] == [
        "StopAttempt", "RequireFiles", "NarrowTools", "Unstick", *SHARED,
    ]  # fmt: skip
    assert [m.name for m in standard] == ["StopAttempt", "RequireFiles", *SHARED]
    # A small model must keep working once its files exist, and samples when it re-asks.
    assert [m.keep_working for m in small if isinstance(m, RequireFiles)] == [True]
    assert [m.keep_working for m in standard if isinstance(m, RequireFiles)] == [False]
    assert [m.resample for m in small if isinstance(m, Reask)] == [True]
    assert [m.resample for m in standard if isinstance(m, Reask)] == [False]
