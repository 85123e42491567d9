"""A step's own copy of what an earlier step defines becomes an import of it.

A small model asked for step 2 often writes the module whole again: its own exception class and
its own data class beside the function the step asks for. The package exports the first step's
classes, so step 2's function then raises a twin exception nobody can catch by the exported
name. The candidate is proved, staged and committed with its copies replaced by imports.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from atom_agent import Context, run_task
from atom_agent.state import Check, Plan, PlanStep
from atom_agent.workspace import Workspace

from .scripts import ExecutorScript, models

LEDGER = '''\
class Overdrawn(Exception):
    """Taking more than a ledger holds."""


class Ledger:
    def __init__(self, total=0):
        self.total = total

    def take(self, n):
        if n > self.total:
            raise Overdrawn(n)
        self.total -= n
'''

MOVE_WITH_TWINS = (
    LEDGER  # the whole first step written again: twin classes beside the function asked for
    + """

def move(src, dst, n):
    if n > src.total:
        raise Overdrawn(n)
    src.take(n)
    dst.total += n
"""
)

PLAN = Plan(
    steps=[
        PlanStep(
            id="ledger", title="Ledger", description="A ledger and its exception.",
            acceptance_criteria=["take lowers the total"], defines=["Overdrawn", "Ledger"],
            checks=[Check(call="l = Ledger(5)\nl.take(2)\nl.total", expect="3")],
        ),
        PlanStep(
            id="mover", title="move", description="move(src, dst, n) between ledgers.",
            acceptance_criteria=["move shifts n"], depends_on=["ledger"], defines=["move"],
            checks=[Check(call="a, b = Ledger(5), Ledger(0)\nmove(a, b, 2)\n(a.total, b.total)",
                          expect="(3, 2)")],
        ),
    ]
)  # fmt: skip


def fenced(code: str) -> list[AIMessage]:
    return [AIMessage(content=f"```python\n{code}```")]


TASK = "First a Ledger with take(n) raising Overdrawn, then move(src, dst, n) between ledgers."


def test_a_steps_twin_classes_become_imports_and_the_package_raises_the_exported_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = ExecutorScript(
        {("ledger", 1): fenced(LEDGER), ("mover", 1): fenced(MOVE_WITH_TWINS)}
    )
    ctx = Context(workspace=str(tmp_path / "ws"), model_profile="small", max_attempts=1,
                  max_replans=0, candidate_zero=False)  # fmt: skip
    outcome = run_task(TASK, ctx, models=models([PLAN], executor))
    assert outcome.step_status == {"ledger": "committed", "mover": "committed"}, outcome.stop_reason

    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    committed = (ws.step(run, "mover").artifacts / "impl.py").read_text()
    assert "class Overdrawn" not in committed and "class Ledger" not in committed
    assert "from deps.ledger.impl import Overdrawn, Ledger" in committed

    info = json.loads(run.run_json.read_text())
    assert info["deliverable"]["conflicts"] == []  # nothing defined twice
    assert outcome.result is not None
    monkeypatch.syspath_prepend(outcome.result)
    package = importlib.import_module(info["deliverable"]["package"])
    src, dst = package.Ledger(1), package.Ledger(0)
    with pytest.raises(package.Overdrawn):  # the exported class: the twin would escape this
        package.move(src, dst, 5)
    assert (src.total, dst.total) == (1, 0)
