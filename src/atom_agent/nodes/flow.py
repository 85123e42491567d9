"""Small nodes that move the run along: start, plan approval, step selection, questions."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import ValidationError

from atom_agent.context import Context
from atom_agent.errors import InvalidInputError, WorkspaceError
from atom_agent.services import Models
from atom_agent.state import Plan, State, plan_problems, topological_order
from atom_agent.telemetry import emit

from .common import plan_of, services
from .planner import finalize_plan


def new_run_id() -> str:
    """A sortable, unique run id: ``20261122-021017-1a2b3c``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def make_start(models: Models | None) -> Any:
    """The start node: validate the input, create the run directory (idempotent)."""

    def start(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        task = state.get("task")
        if not isinstance(task, str) or not task.strip():
            raise InvalidInputError("the input needs a non-empty 'task' string")
        svc = services(runtime, models)
        run_id = state.get("run_id") or new_run_id()
        try:
            svc.workspace.run(run_id)
        except WorkspaceError:
            svc.workspace.create_run(
                run_id,
                task=task.strip(),
                status="planning",
                models={role: svc.spec(role) for role in ("planner", "executor", "reflector")},
                project_id=svc.ctx.project_id,
            )
        emit("run.start", run_id=run_id, task=task.strip()[:200])
        return {
            "run_id": run_id,
            "task": task.strip(),
            "status": "planning",
            "started_at": state.get("started_at") or time.time(),
            "replans": state.get("replans", 0),
        }

    return start


def approve_plan(state: State) -> dict[str, Any]:
    """Pause for a human to approve, edit or reject the plan (``Context.approve_plan``).

    Resume with ``True`` / ``"approve"`` to run it, ``{"plan": {...}}`` to run an edited plan,
    or any other text to have it replanned with that text as the reviewer's note.
    """
    answer = interrupt({"kind": "plan_approval", "run_id": state["run_id"], "plan": state["plan"]})
    if answer is True or (isinstance(answer, str) and answer.strip().lower() in ("approve", "yes")):
        return {"decision": None, "plan_feedback": ""}
    if isinstance(answer, dict) and "plan" in answer:
        try:
            plan = finalize_plan(Plan.model_validate(answer["plan"]), state["task"])
        except ValidationError as exc:
            return {
                "decision": "replan",
                "plan_feedback": f"edited plan invalid: {str(exc).splitlines()[0][:300]}",
            }
        problems = plan_problems(plan)
        if problems:
            return {
                "decision": "replan",
                "plan_feedback": "edited plan invalid: " + "; ".join(problems),
            }
        return {
            "plan": plan.model_dump(),
            "step_status": {s.id: "pending" for s in plan.steps},
            "decision": None,
        }
    return {"decision": "replan", "plan_feedback": str(answer)}


def select_step(state: State) -> dict[str, Any]:
    """Choose the next runnable step (dependencies committed), or none when the run is over."""
    if state.get("status") in ("failed", "rejected"):
        return {"current_step": None}
    plan = plan_of(state)
    statuses = dict(state.get("step_status") or {})
    for step_id in topological_order(plan):
        if statuses.get(step_id) != "pending":
            continue
        step = next(s for s in plan.steps if s.id == step_id)
        if all(statuses.get(dep) == "committed" for dep in step.depends_on):
            emit("step.start", run_id=state["run_id"], step_id=step_id)
            return {"current_step": step_id, "decision": None}
    return {"current_step": None}


def ask_user(state: State) -> dict[str, Any]:
    """Interrupt with the executor's question; the answer goes into later attempts' prompts."""
    question = state.get("question") or ""
    answer = interrupt(
        {
            "kind": "question",
            "run_id": state["run_id"],
            "step_id": state.get("current_step"),
            "question": question,
        }
    )
    return {"answers": [{"question": question, "answer": str(answer)}], "question": None}
