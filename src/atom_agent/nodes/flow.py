"""Small nodes that move the run along: start, plan approval, step selection, questions."""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt
from pydantic import ValidationError

from atom_agent import budget
from atom_agent.context import Context
from atom_agent.errors import ConfigError, InvalidInputError, WorkspaceError
from atom_agent.resources import ROLES, Resources
from atom_agent.rule_text import own_task, with_rules
from atom_agent.state import Plan, State, plan_problems, topological_order
from atom_agent.telemetry import emit

from .common import plan_of, run_ref
from .planner import accept_plan, finalize_plan
from .rules import carried_block, carry_rules


def new_run_id() -> str:
    """A sortable, unique run id: ``20261122-021017-1a2b3c``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def make_start(res: Resources) -> Any:
    """The start node: refuse a foreign context, validate the input, create the run directory.

    Every node reads its settings from ``res.ctx``, the one channel for the Context; this is
    the only node that reads the invoke-time ``Runtime``, and only to refuse a run invoked with
    a ``context=`` other than the Resources' (:func:`check_context`). Creating the run
    directory is idempotent.
    """

    def start(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        check_context(runtime.context, res.ctx)
        task = state.get("task")
        if not isinstance(task, str) or not task.strip():
            raise InvalidInputError("the input needs a non-empty 'task' string")
        run_id = state.get("run_id") or new_run_id()
        try:
            run = res.workspace.run(run_id)
            # A re-run start (a crash before its checkpoint): the run carries what it carried.
            rules = res.workspace.read_run(run).get("rules") or {}
            text = with_rules(own_task(task.strip()), carried_block(rules))
        except WorkspaceError:
            text, rules = carry_rules(res, run_id, task.strip())
            res.workspace.create_run(
                run_id,
                task=own_task(task.strip()),
                rules=rules,
                status="planning",
                models={role: res.spec(role) for role in ROLES},
                project_id=res.ctx.project_id,
                **({"prompts_given": sorted(res.prompts.replaced)} if res.prompts.replaced else {}),
                **(
                    {"repo": res.ctx.repo, "test_command": res.ctx.test_command}
                    if res.ctx.repo
                    else {}
                ),
            )
        emit("run.start", run_id=run_id, task=task.strip()[:200])
        return {
            "run_id": run_id,
            "task": text,
            "rules": list(
                dict.fromkeys([*(rules.get("carried") or []), *(rules.get("stated") or [])])
            ),  # fmt: skip
            "status": "planning",
            "started_at": state.get("started_at") or budget.now(),
            "replans": state.get("replans", 0),
        }

    return start


def check_context(given: Any, built: Context) -> None:
    """Refuse a run whose Context differs from the one the graph's Resources were built for.

    The nodes read every setting from the Resources (``build_graph(resources)``); a different
    ``context=`` at invoke time would be silently ignored. The start node calls this once per
    run, the single place the invoke-time context is read.

    Raises:
        ConfigError: `given` is a Context (or its fields) that differs from `built`.
    """
    if given is None:
        return
    fields = {f.name for f in dataclasses.fields(Context)}
    sent = given if isinstance(given, dict) else {n: getattr(given, n, None) for n in fields}
    differ = sorted(n for n in fields if n in sent and sent[n] != getattr(built, n))
    if differ:
        raise ConfigError(
            f"the run's context differs from the one its graph was built for in {differ}: "
            f"build the graph with Resources(<that Context>), or invoke it with "
            f"context=resources.ctx"
        )


def make_approve_plan(res: Resources) -> Any:
    """The plan-approval node, closed over the run's resources."""

    def approve_plan(state: State) -> dict[str, Any]:
        """Pause for a human to approve, edit or reject the plan (``Context.approve_plan``).

        Resume with ``True`` / ``"approve"`` / ``{"approve": true}`` to run it,
        ``{"plan": {...}}`` to run an edited plan, or a note (a non-empty string or
        ``{"note": "..."}``) to have it replanned with that note. Anything else (``42``,
        ``False``, a dict without those keys, an edited plan that is invalid) is never taken:
        the node asks again with a new interrupt whose ``error`` says what was wrong.
        """
        request: dict[str, Any] = {
            "kind": "plan_approval",
            "run_id": state["run_id"],
            "plan": state["plan"],
            "accepts": PLAN_ANSWERS,
        }
        while True:
            answer = interrupt(request)
            update, error = _plan_answer(answer, state["task"])
            if error is None and "plan" in update:  # an edited plan: its revision, step folders
                plan = Plan.model_validate(update["plan"])
                run = run_ref(res, state)
                return {**accept_plan(res, state, run, plan, "edited at approval", {}),
                        "decision": None}  # fmt: skip
            if error is None:
                return update
            emit("resume.invalid", run_id=state["run_id"], kind="plan_approval", error=error)
            request = {**request, "error": error}

    return approve_plan


PLAN_ANSWERS = (
    'true or "approve" to run the plan; {"plan": {...}} to run an edited plan; '
    'a note (a string, or {"note": "..."}) to have it replanned'
)


def _plan_answer(answer: Any, task: str) -> tuple[dict[str, Any], str | None]:
    """The state update a plan-approval answer means, or the reason it cannot be taken."""
    if answer is True:
        return {"decision": None, "plan_feedback": ""}, None
    if isinstance(answer, str) and answer.strip():
        if answer.strip().lower() in ("approve", "approved", "yes", "ok"):
            return {"decision": None, "plan_feedback": ""}, None
        return {"decision": "replan", "plan_feedback": answer.strip()}, None
    if isinstance(answer, dict):
        if answer.get("approve") is True and len(answer) == 1:
            return {"decision": None, "plan_feedback": ""}, None
        if set(answer) == {"note"} and isinstance(answer["note"], str) and answer["note"].strip():
            return {"decision": "replan", "plan_feedback": answer["note"].strip()}, None
        if "plan" in answer and set(answer) <= {"plan", "note"}:
            try:
                plan = finalize_plan(Plan.model_validate(answer["plan"]), task)
            except ValidationError as exc:
                return {}, f"the edited plan is invalid: {_validation_text(exc)}"
            problems = plan_problems(plan)
            if problems:
                return {}, "the edited plan is invalid: " + "; ".join(problems)
            return {"plan": plan.model_dump()}, None
    return {}, f"{_shown(answer)} is not an answer to a plan approval: send {PLAN_ANSWERS}"


def _validation_text(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
    return "; ".join(parts)[:600]


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


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
    """Interrupt with the executor's question; the answer goes into later attempts' prompts.

    The answer is a non-empty string or ``{"answer": "..."}``; anything else is asked again
    with a new interrupt whose ``error`` says what was wrong.
    """
    question = state.get("question") or ""
    request: dict[str, Any] = {
        "kind": "question",
        "run_id": state["run_id"],
        "step_id": state.get("current_step"),
        "question": question,
    }
    while True:
        answer = interrupt(request)
        if isinstance(answer, dict) and set(answer) == {"answer"}:
            answer = answer["answer"]
        if isinstance(answer, str) and answer.strip():
            return {"answers": [{"question": question, "answer": answer.strip()}], "question": None}
        error = (
            f"{_shown(answer)} is not an answer: send the answer as a non-empty string "
            '(or {"answer": "..."})'
        )
        emit("resume.invalid", run_id=state["run_id"], kind="question", error=error)
        request = {**request, "error": error}
