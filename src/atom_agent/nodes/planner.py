"""Planner node: task → a validated Plan (a DAG), re-asked when invalid; replans keep commits."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.runtime import Runtime

from atom_agent import prompts
from atom_agent.context import Context
from atom_agent.models.structured import invoke_structured
from atom_agent.services import Models
from atom_agent.state import Plan, PlanStep, State, outline, plan_problems
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of

from .common import plan_of, run_ref, services

logger = logging.getLogger(__name__)

MAX_PLAN_TRIES = 3
"""How many times an invalid plan is sent back to the model before the run fails."""


def make_planner(models: Models | None) -> Any:
    """The planner node, closed over the model override of `build_graph`."""

    def planner(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        svc = services(runtime, models)
        run = run_ref(svc, state)
        model = svc.model("planner")
        committed: list[PlanStep] = []
        replan_text = ""
        if state.get("plan"):
            old = plan_of(state)
            statuses = state.get("step_status") or {}
            committed = [s for s in old.steps if statuses.get(s.id) == "committed"]
            listed = outline(Plan(steps=committed)) if committed else "(none)"
            replan_text = prompts.PLANNER_REPLAN.format(
                committed=listed, failure=state.get("plan_feedback") or "(no details)"
            )
        if svc.ctx.max_plan_steps == 1 and not state.get("plan"):
            # One step can only be the task itself: no model call needed to plan it.
            return _accept(svc, state, run, single_step_plan(state["task"]), "initial plan", {})
        feedback = state.get("plan_feedback", "") if not replan_text else ""
        messages: list[BaseMessage] = [
            SystemMessage(prompts.PLANNER_SYSTEM.format(max_steps=svc.ctx.max_plan_steps)),
            HumanMessage(
                prompts.PLANNER_TASK.format(
                    task=state["task"],
                    replan=replan_text,
                    feedback=f"\nReviewer's note on the previous plan: {feedback}\n"
                    if feedback
                    else "",
                )
            ),
        ]
        structured = svc.structured("planner", Plan)
        spent: list[BaseMessage] = []
        problems: list[str] = []
        plan: Plan | None = None
        for attempt in range(1, MAX_PLAN_TRIES + 1):
            reply = invoke_structured(structured, messages)
            raw = reply.raw
            if raw is not None:
                spent.append(raw)
            parsed = reply.parsed
            if parsed is None:
                problems = [f"the answer did not match the Plan schema: {reply.error}"]
            else:
                candidate = Plan.model_validate(parsed)
                if svc.ctx.max_plan_steps == 1 and not committed:
                    candidate = merge_into_one_step(candidate)
                merged = _keep_committed(committed, candidate)
                problems = plan_problems(merged, max_steps=svc.ctx.max_plan_steps)
                if not problems:
                    plan = merged
                    break
            emit("plan.invalid", run_id=state["run_id"], attempt=attempt, problems=problems)
            if raw is not None:
                messages.append(raw)
                # A tool-call reply needs its tool result before the next human turn.
                for call in raw.tool_calls:
                    messages.append(
                        ToolMessage(content="rejected", tool_call_id=call["id"] or "", name="Plan")
                    )
            messages.append(
                HumanMessage(
                    prompts.PLANNER_INVALID.format(problems="\n".join(f"- {p}" for p in problems))
                )
            )
        usage = usage_of(spent, model_name_of(model))
        if plan is None:
            reason = f"the planner gave no valid plan in {MAX_PLAN_TRIES} tries: " + "; ".join(
                problems
            )
            return {"status": "failed", "stop_reason": reason, "usage": usage}
        return _accept(svc, state, run, plan, "replan" if replan_text else "initial plan", usage)

    return planner


def _accept(
    svc: Any, state: State, run: Any, plan: Plan, reason: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """Write a valid plan's revision and step folders; the state update that adopts it."""
    revision = svc.workspace.write_plan(run, plan.model_dump(), reason=reason)
    old_status = state.get("step_status") or {}
    statuses = {
        s.id: ("committed" if old_status.get(s.id) == "committed" else "pending")
        for s in plan.steps
    }
    for step in plan.steps:
        svc.workspace.create_step(
            run,
            step.id,
            depends_on=step.depends_on,
            exist_ok=True,
            **{k: v for k, v in step.model_dump().items() if k not in ("id", "depends_on")},
        )
    emit("plan.ready", run_id=state["run_id"], revision=revision, steps=len(plan.steps))
    svc.workspace.update_run(run, status="running", plan_revision=revision)
    return {
        "plan": plan.model_dump(),
        "plan_revision": revision,
        "plan_feedback": "",
        "step_status": statuses,
        "status": "running",
        "usage": usage,
        "replans": state.get("replans", 0) + (1 if reason == "replan" else 0),
    }


SINGLE_STEP_CRITERIA = (
    "impl.py implements exactly what the task asks (names and signatures as given)",
    "test.py has pytest tests of that behaviour, including edge cases, and they pass",
)


def single_step_plan(task: str) -> Plan:
    """The plan of a task held to one step (``max_plan_steps=1``): the step is the task.

    A model asked to plan one function only restates it (and small models still split it in
    two); the first replan, which has a failure to learn from, goes to the model.
    """
    first_line = next((line.strip() for line in task.splitlines() if line.strip()), "the task")
    title = first_line if len(first_line) <= 80 else first_line[:77].rstrip() + "..."
    return Plan(
        steps=[
            PlanStep(
                id="step1",
                title=title,
                description="Do the whole task above: the code in impl.py, its tests in test.py.",
                acceptance_criteria=list(SINGLE_STEP_CRITERIA),
                depends_on=[],
                expected_files=["impl.py", "test.py"],
            )
        ],
        rationale="max_plan_steps=1: the whole task is one step",
    )


def merge_into_one_step(plan: Plan) -> Plan:
    """A plan of several steps as one step (``max_plan_steps=1``), nothing dropped.

    Small models split even one function into "code" and "tests" steps and rarely obey a
    one-step limit when re-asked; joining the steps keeps every criterion and costs no call.
    """
    if len(plan.steps) <= 1:
        return plan
    first = plan.steps[0]
    criteria = list(dict.fromkeys(c for s in plan.steps for c in s.acceptance_criteria))
    files = list(dict.fromkeys(f for s in plan.steps for f in s.expected_files))
    return Plan(
        steps=[
            PlanStep(
                id=first.id,
                title=first.title,
                description="\n".join(f"- {s.title}: {s.description}" for s in plan.steps),
                acceptance_criteria=criteria,
                depends_on=[],
                expected_files=files,
            )
        ],
        rationale=plan.rationale,
    )


def _keep_committed(committed: list[PlanStep], plan: Plan) -> Plan:
    """Committed steps stay verbatim and first; the model's steps with their ids are dropped."""
    if not committed:
        return plan
    kept = {s.id for s in committed}
    rest = [s for s in plan.steps if s.id not in kept]
    return Plan(steps=[*committed, *rest], rationale=plan.rationale)
