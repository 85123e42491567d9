"""Models factories for CLI subprocess tests (`--models-factory tests.unit.graph.factory:…`)."""

from __future__ import annotations

import os

from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel

from .scripts import ExecutorScript, models, passing_attempt, step


def two_slow_steps() -> dict[str, ScriptedChatModel]:
    """Two independent steps; the executor takes ATOM_TEST_LATENCY seconds per call."""
    latency = float(os.environ.get("ATOM_TEST_LATENCY", "0"))
    plan = Plan(steps=[step("one"), step("two")])
    executor = ExecutorScript({("one", 1): passing_attempt(), ("two", 1): passing_attempt()})
    roles = models([plan], executor)
    roles["executor"].latency_s = latency
    return roles


def asks_a_question() -> dict[str, ScriptedChatModel]:
    """One step whose first attempt asks the user."""
    from atom_agent.testing import tool_call

    executor = ExecutorScript(
        {
            ("one", 1): [tool_call("ask_user", {"question": "Which name?"})],
            ("one", 2): passing_attempt(),
        }
    )
    return models([Plan(steps=[step("one")])], executor)
