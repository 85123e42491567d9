"""The planner's second job: a contract for every step, before any code is written.

The planner model is asked, per step that has no runnable check yet, for pytest asserts in a
fenced block (the format a small model writes best, and cheap: no JSON schema to fill); code
reads them back into checks (:mod:`atom_agent.checks.asserts`) and validates them against what
the step defines. The call that writes the contract never sees code, and the call that writes
code never sees the contract until a check fails: the two stay independent.
"""

from __future__ import annotations

import logging

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent import prompts
from atom_agent.checks.asserts import checks_from_tests
from atom_agent.checks.contract import check_problems
from atom_agent.state import Plan, PlanStep
from atom_agent.telemetry import emit

from .drafting import extract_code, sample

logger = logging.getLogger(__name__)

CONTRACT_TEMPERATURE = 0.0


def write_contracts(
    model: BaseChatModel, task: str, plan: Plan, *, skip: set[str] | None = None
) -> tuple[Plan, list[AIMessage]]:
    """`plan` with a contract for each step that has no runnable check (and is not in `skip`).

    Returns the plan and the model's replies (for usage). A reply without usable asserts
    leaves its step without checks; the step then relies on its tests.
    """
    spent: list[AIMessage] = []
    steps: list[PlanStep] = []
    available: list[str] = []
    for step in plan.steps:
        runnable = [
            c
            for c in step.checks
            if not check_problems(c, defines=step.defines, available=available)
        ]
        if runnable or step.id in (skip or set()) or not step.defines:
            steps.append(step)
            available += step.defines
            continue
        reply = sample(
            model, [HumanMessage(contract_prompt(task, plan, step))], CONTRACT_TEMPERATURE
        )
        spent.append(reply)
        criterion = step.acceptance_criteria[0] if len(step.acceptance_criteria) == 1 else ""
        found = checks_from_tests(extract_code(reply.text, tests=True), criterion=criterion)
        usable = [
            c for c in found if not check_problems(c, defines=step.defines, available=available)
        ]
        emit("plan.contract", step_id=step.id, asserts=len(found), usable=len(usable))
        steps.append(step.model_copy(update={"checks": [*step.checks, *usable[:MAX_CHECKS]]}))
        available += step.defines
    return Plan(steps=steps, rationale=plan.rationale), spent


MAX_CHECKS = 10
"""Checks kept from one contract reply."""


def contract_prompt(task: str, plan: Plan, step: PlanStep) -> str:
    """The contract request of one step: the task, the step, and what it defines."""
    scope = (
        ""
        if len(plan.steps) == 1
        else prompts.CONTRACT_STEP.format(title=step.title, description=step.description.strip())
    )
    return prompts.CONTRACT_TASK.format(
        task=task.strip(), step=scope, names=", ".join(step.defines)
    )
