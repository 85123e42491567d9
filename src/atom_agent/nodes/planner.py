"""Planner node: task → a validated Plan (a DAG), one step when invalid; replans keep commits."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from pydantic import ValidationError

from atom_agent.checks.contract import ContractReport
from atom_agent.models.concurrent import alongside
from atom_agent.models.profiles import profile_for
from atom_agent.models.purpose import calling
from atom_agent.models.structured import SizedReply, StructuredReply, invoke_sized
from atom_agent.names import (
    STANDALONE,
    called_names,
    code_blocks,
    defined_in_code,
    free_names,
    named_in_text,
    without_methods,
    without_shorthands,
)
from atom_agent.prompts import prompt_text, register
from atom_agent.resources import Resources
from atom_agent.rule_text import own_task
from atom_agent.selection.candidates import ask_plain, best_of, meets_clauses
from atom_agent.state import (
    REQUIRED_FILES,
    Check,
    Plan,
    PlanStep,
    ProposedPlan,
    State,
    outline,
    plan_problems,
)
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of
from atom_agent.verification.clauses import placed, rule_clauses, task_clauses
from atom_agent.verification.contracts import write_contracts
from atom_agent.workspace import RunRef
from atom_agent.workspace.atomic import atomic_write_json

from .common import plan_of, run_ref

logger = logging.getLogger(__name__)

PLANNER_SYSTEM = register(
    "PLANNER_SYSTEM",
    """\
You are the planner of a coding agent. Split the user's software task into a small plan of \
steps. Each step produces Python code in `impl.py` plus pytest tests in `test.py`, and is \
checked by running those tests.

Rules:
- Use at most {max_steps} step(s), fewer when you can; a small task (one function, one class) is
ONE step.
- Every step writes both the code and its tests: never plan a step that only writes tests.
- Every step has a unique short id (lowercase slug), a title, a precise description, and \
acceptance criteria that a test can check.
- `defines` lists the public functions and classes the step's impl.py defines. Every step \
defines something new; a step that changes a function of an earlier step depends on it.
- `checks` make the criteria executable, before any code exists: 2-6 per step, each a Python \
`call` of the step's code with the exact `expect`ed result (a Python literal) or the exception \
it `raises`, and the `criterion` it proves. Work each expected value out carefully from the \
task; for example {{"call": "initials('Ada Lovelace')", "expect": "'AL'", "criterion": \
"each word gives its first letter"}} or {{"call": "parse('')", "raises": "ValueError", \
"criterion": "empty input is rejected"}}.
- `depends_on` lists the ids of earlier steps whose committed code this step imports or reads.
- The dependencies must form a DAG: no cycles, only ids of steps in the plan.""",
)

PLANNER_TASK = register(
    "PLANNER_TASK",
    """\
Task:
{task}
{replan}{feedback}
Answer with the plan.""",
)

PLANNER_REPLAN = register(
    "PLANNER_REPLAN",
    """
This is a replan. These steps are already committed and stay as they are (you may depend on \
them, do not repeat them):
{committed}
Steps the evidence shows wrong or incomplete are not listed: plan them again (same id), with \
what they lacked.

This step failed after all its attempts; plan the remaining work differently:
{failure}
""",
)


def planner_system(max_steps: int) -> str:
    """The planner's system prompt (or the user's replacement), ``{max_steps}`` filled in."""
    return prompt_text("PLANNER_SYSTEM").format(max_steps=max_steps)


@dataclass(frozen=True)
class _Zero:
    """Candidate zero: the model's plain answer to the whole task, and what it took."""

    plain: str
    """The code ('' if the reply had none)."""
    seconds: float
    """How long the plain call took."""
    spent: list[BaseMessage]
    """The replies, for usage."""
    meets_task: bool
    """Every check the task's clauses state passed (at least one ran)."""


def make_planner(res: Resources) -> Any:
    """The planner node, closed over the run's resources."""

    def planner(state: State) -> dict[str, Any]:
        run = run_ref(res, state)
        model = res.model("planner")
        committed, replan_text = _replan_context(state)
        with alongside(_contracts_ahead(res, state)) as ahead:
            zero = _ask_candidate_zero(res, run, state)
        spent = list(zero.spent) if zero is not None else []
        reason = _one_step_reason(res, state, zero)
        if reason is None:
            plan, problems, asked = _ask_for_plan(res, state, committed, replan_text)
            spent += asked
            plan, reason = _fall_back(state, plan, problems, replanning=bool(replan_text))
            if plan is None:
                # A replan never loses the run: the attempts so far stay, on the last valid plan.
                usage = usage_of(spent, model_name_of(model))
                return {**keep_last_plan(res, state, run, problems, usage), **_plain(zero)}
        else:
            # One step can only be the task itself (one function or class, or a plan held to
            # one step): no model call is needed to plan it, only its contract.
            plan = finalize_plan(single_step_plan(state["task"]), state["task"])
        if ahead is not None and len(plan.steps) == 1:  # its contract, asked alongside
            plan, contracts = ahead.result()
        else:
            skip, parallel = {s.id for s in committed}, res.parallel_calls("planner")
            plan, contracts = write_contracts(
                model, state["task"], plan, skip=skip, parallel=parallel
            )
        usage = usage_of([*spent, *contracts], model_name_of(model))
        return {**accept_plan(res, state, run, plan, reason, usage), **_plain(zero)}

    return planner


def _replan_context(state: State) -> tuple[list[PlanStep], str]:
    """A replan's committed steps (they stay) and its prompt section; ([], '') on a first plan."""
    if not state.get("plan"):
        return [], ""
    old = plan_of(state)
    statuses = state.get("step_status") or {}
    reopened = set(state.get("reopen") or [])
    committed = [s for s in old.steps if statuses.get(s.id) == "committed" and s.id not in reopened]
    listed = outline(Plan(steps=committed)) if committed else "(none)"
    replan_text = prompt_text("PLANNER_REPLAN").format(
        committed=listed, failure=state.get("plan_feedback") or "(no details)"
    )
    return committed, replan_text


def _asks_zero(res: Resources, state: State) -> bool:
    """This first plan asks for candidate zero (not on a replan, nor when off or had)."""
    return not state.get("plan") and res.ctx.candidate_zero and state.get("plain") is None


def _ask_candidate_zero(res: Resources, run: RunRef, state: State) -> _Zero | None:
    """Candidate zero when this first plan asks for it (None on a replan, or when off or had)."""
    return _candidate_zero(res, run, state["task"]) if _asks_zero(res, state) else None


def _one_step_whatever_it_answers(res: Resources, state: State) -> bool:
    """A first plan that is the task as one step, known before the plain answer."""
    return not state.get("plan") and (
        res.ctx.max_plan_steps == 1 or single_unit(own_task(state["task"]))
    )


def _contracts_ahead(
    res: Resources, state: State
) -> Callable[[], tuple[Plan, list[AIMessage]]] | None:
    """The contract call of a one-step first plan, to make while the plain answer is asked.

    Neither depends on the other: the plan is known from the task alone, and the contract is
    written from the task, never from an answer. Only where the models answer calls side by
    side (:meth:`~atom_agent.resources.Resources.parallel_calls`; an API or a model server):
    the embedded model decodes one sequence at a time, so there it would only wait.
    """
    known = _one_step_whatever_it_answers(res, state) or (
        not state.get("plan") and one_step_task(state["task"])  # one step, by its answer or not
    )
    if not known or not _asks_zero(res, state):
        return None
    if res.parallel_calls("planner", "executor") < 2:
        return None
    plan = finalize_plan(single_step_plan(state["task"]), state["task"])
    model, task = res.model("planner"), state["task"]
    emit("plan.contract_alongside", run_id=state["run_id"])
    return lambda: write_contracts(model, task, plan)


def _one_step_reason(res: Resources, state: State, zero: _Zero | None) -> str | None:
    """Why a first plan is the task as one step, planned without a call (None: ask the model)."""
    if state.get("plan"):
        return None
    if _one_step_whatever_it_answers(res, state):
        return "initial plan"
    if zero is not None and zero.meets_task:
        emit("plan.plain_meets_task", run_id=state["run_id"])
        return "initial plan: one step, the plain answer meets every check the task states"
    if one_step_task(state["task"]):
        emit("plan.one_step_task", run_id=state["run_id"])
        return "initial plan: one step, the task asks for a few names of one module, unordered"
    return None


def _plan_request(res: Resources, state: State, replan_text: str) -> list[BaseMessage]:
    """The planner's prompt: the task, a replan's context, else the reviewer's note if any."""
    feedback = state.get("plan_feedback", "") if not replan_text else ""
    return [
        SystemMessage(planner_system(res.ctx.max_plan_steps)),
        HumanMessage(
            prompt_text("PLANNER_TASK").format(
                task=state["task"],
                replan=replan_text,
                feedback=f"\nReviewer's note on the previous plan: {feedback}\n"
                if feedback
                else "",
            )
        ),
    ]


def _ask_for_plan(
    res: Resources, state: State, committed: list[PlanStep], replan_text: str
) -> tuple[Plan | None, list[str], list[BaseMessage]]:
    """Ask once: the valid plan (None if invalid), the problems found, and the reply.

    An invalid plan is not sent back to the model: the fallback (the task as one step, or on
    a replan the last valid plan) costs no call, and no measured plan call was invalid.
    """
    most = min(res.ctx.max_plan_steps, PLAN_STEPS_PER_REPLY)
    with calling("plan", "PLANNER_REPLAN" if replan_text else "PLANNER_TASK"):
        sized = invoke_sized(
            res.model("planner"),
            ProposedPlan.__name__,
            plan_schema(most),
            _plan_request(res, state, replan_text),
            max_tokens=plan_max_tokens(most),
            description="the plan",
        )
    reply = _as_structured(sized)
    plan, problems = _validated(res, state["task"], committed, reply)
    if plan is None:
        emit("plan.invalid", run_id=state["run_id"], problems=problems)
    return plan, problems, [reply.raw] if reply.raw is not None else []


PLAN_STEPS_PER_REPLY = 6
"""Steps one plan reply may hold (``max_plan_steps`` when lower): the plan's schema bounds
every list and text in it, so its reply ends where the plan does, within a ``max_tokens``
sized to what the schema admits (:func:`plan_max_tokens`)."""
PLAN_TEXT_CHARS = {"id": 32, "title": 60, "description": 240, "criterion": 100, "name": 40}
"""Longest text of each kind in a plan reply (the schema's ``maxLength``)."""
PLAN_LISTS = {"acceptance_criteria": 3, "defines": 5, "depends_on": 3}
"""Most items of each list of a step."""
PROSE_CHARS_PER_TOKEN = 3.0
NAME_CHARS_PER_TOKEN = 2.0
"""Characters per token, counted low: of a plan's prose, and of its ids and names."""
STEP_JSON_TOKENS = 48
"""Tokens of a step's JSON around its texts (keys, quotes, brackets)."""
PLAN_JSON_TOKENS = 64
"""Tokens of a plan's JSON around its steps, its rationale included."""


def plan_schema(most: int) -> dict[str, Any]:
    """The JSON schema of a plan reply of at most `most` steps, every list and text bounded."""

    def text(kind: str) -> dict[str, Any]:
        return {"type": "string", "maxLength": PLAN_TEXT_CHARS[kind]}

    def names(key: str, kind: str) -> dict[str, Any]:
        return {"type": "array", "items": text(kind), "maxItems": PLAN_LISTS[key]}

    step = {
        "type": "object",
        "properties": {
            "id": {**text("id"), "minLength": 1},
            "title": text("title"),
            "description": text("description"),
            "acceptance_criteria": {**names("acceptance_criteria", "criterion"), "minItems": 1},
            "depends_on": names("depends_on", "id"),
            "defines": names("defines", "name"),
        },
        "required": ["id", "title", "description", "acceptance_criteria", "depends_on",
                     "defines"],
    }  # fmt: skip
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": most},
            "rationale": text("title"),
        },
        "required": ["steps", "rationale"],
    }


def plan_max_tokens(most: int) -> int:
    """``max_tokens`` of a plan reply of at most `most` steps: what :func:`plan_schema` admits."""
    chars = PLAN_TEXT_CHARS
    prose = chars["title"] + chars["description"]
    prose += PLAN_LISTS["acceptance_criteria"] * chars["criterion"]
    names = PLAN_LISTS["defines"] * chars["name"] + (1 + PLAN_LISTS["depends_on"]) * chars["id"]
    step = prose / PROSE_CHARS_PER_TOKEN + names / NAME_CHARS_PER_TOKEN + STEP_JSON_TOKENS
    rationale = chars["title"] / PROSE_CHARS_PER_TOKEN
    return math.ceil(PLAN_JSON_TOKENS + rationale + most * step)


def _as_structured(sized: SizedReply) -> StructuredReply:
    """A plan reply as the plan's parser reads it: the plan, or why there is none."""
    if sized.data is None:
        why = "the reply held no JSON object" if not sized.text else "the reply was cut off"
        return StructuredReply(None, sized.raw, why)
    try:
        return StructuredReply(ProposedPlan.model_validate(sized.data), sized.raw)
    except ValidationError as exc:
        return StructuredReply(None, sized.raw, f"ValidationError: {exc}")


def _validated(
    res: Resources, task: str, committed: list[PlanStep], reply: StructuredReply
) -> tuple[Plan | None, list[str]]:
    """The reply's plan, finished by code, committed steps first; None while it has problems."""
    if reply.parsed is None:
        return None, [f"the answer did not match the Plan schema: {reply.error}"]
    candidate = _proposed(reply.parsed, reply.raw)
    if res.ctx.max_plan_steps == 1 and not committed:
        candidate = merge_into_one_step(candidate)
    elif not committed:
        candidate = fold_repeated_steps(candidate)
    candidate = finalize_plan(candidate, task, committed=committed)
    merged = _keep_committed(committed, candidate)
    problems = plan_problems(merged, max_steps=res.ctx.max_plan_steps)
    return (None if problems else merged), problems


def _fall_back(
    state: State, plan: Plan | None, problems: list[str], *, replanning: bool
) -> tuple[Plan | None, str]:
    """The plan to adopt and why: the model's, else on a first plan the task as one step.

    None on a replan without a valid plan: the last valid plan is kept instead.
    """
    if plan is not None:
        return plan, "replan" if replanning else "initial plan"
    if replanning:
        return None, "replan"
    # Never worse than asking once: a task the planner cannot split is done as one
    # step (the whole task, its contract from the task's examples or the model).
    only = finalize_plan(single_step_plan(state["task"]), state["task"])
    emit("plan.fallback", run_id=state["run_id"], problems=problems)
    return only, f"initial plan: one step, the planner's plans were invalid ({problems[0]})"


def _candidate_zero(res: Resources, run: RunRef, task: str) -> _Zero:
    """Ask the model once for the whole task; run the task's own checks on its answer.

    When the answer fails a check the task states, the profile's ``task_samples`` more
    answers are sampled from the same prompt (warm, never shown a check) and the one that
    executes best on the task's checks is kept: the plain answer is replaced only by one that
    passes more of them (:func:`~atom_agent.selection.candidates.best_of`).
    """
    names = task_names(task)
    model = res.model("executor")
    answer = ask_plain(model, task, names, end_at_tests=True)
    folder = res.workspace.write_plain(run, answer.source, answer.reply.text)
    clauses = task_clauses(task, names=names)
    profile = profile_for(model, res.ctx.model_profile)

    def judge(source: str, where: Path) -> ContractReport | None:
        return meets_clauses(source, clauses, folder=where, runner=res.runner,
                             limits=res.limits, defines=names)  # fmt: skip

    choice = best_of(
        model, task, names, answer, judge(answer.source, folder), judge=judge,
        temperatures=profile.warming[: profile.task_samples], folder=folder / "samples",
    )  # fmt: skip
    if choice.index:
        res.workspace.write_plain(run, choice.source, choice.reply_text)
    report = choice.report
    meets = report is not None and report.task_checks_hold() and report.all_passed()
    if choice.replies:  # which whole-task sample won, for the calls-that-counted benchmark
        atomic_write_json(
            folder / "samples" / "choice.json",
            {"samples": len(choice.replies), "chosen": choice.index,
             "checks": report.summary() if report is not None else None},
        )  # fmt: skip
    emit(
        "plan.candidate_zero",
        run_id=run.run_id,
        code=bool(choice.source),
        checks=report.summary() if report is not None else "no check stated",
        meets_task=meets,
        samples=len(choice.replies),
        chosen=choice.index,
    )
    return _Zero(choice.source, answer.seconds, [answer.reply, *choice.replies], meets)


def plain_written(res: Resources, state: State) -> dict[str, Any]:
    """Candidate zero as the workspace holds it, for a planner a budget stopped midway.

    The plain answer is written to ``runs/<id>/plain/`` as soon as it is read (a better
    task sample replaces it there), so a planner stopped before its plan still leaves the
    user what one plain call gave ({} when the state has it already or none was written).
    """
    if state.get("plain") is not None or not res.ctx.candidate_zero:
        return {}
    impl = res.workspace.plain_dir(run_ref(res, state)) / "impl.py"
    return {"plain": impl.read_text(encoding="utf-8", errors="replace")} if impl.is_file() else {}


def _plain(zero: _Zero | None) -> dict[str, Any]:
    """The state update that keeps candidate zero ({} when it was not asked for now)."""
    if zero is None:
        return {}
    return {"plain": zero.plain, "plain_seconds": zero.seconds}


def _proposed(parsed: Any, raw: AIMessage | None) -> Plan:
    """The plan a reply proposes; checks it wrote itself are kept when they are well formed."""
    proposal = ProposedPlan.model_validate(parsed).to_plan()
    args = raw.tool_calls[0]["args"] if raw is not None and raw.tool_calls else None
    if isinstance(args, dict):
        try:
            return Plan.model_validate(args)
        except ValidationError:
            return proposal
    return proposal


def accept_plan(
    res: Resources, state: State, run: RunRef, plan: Plan, reason: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """Write a valid plan's revision and step folders; the state update that adopts it."""
    revision = res.workspace.write_plan(run, plan.model_dump(), reason=reason)
    old_status = state.get("step_status") or {}
    reopened = set(state.get("reopen") or [])
    statuses = {
        s.id: (
            "committed"
            if old_status.get(s.id) == "committed" and s.id not in reopened
            else "pending"
        )
        for s in plan.steps
    }
    for step in plan.steps:
        res.workspace.create_step(
            run,
            step.id,
            depends_on=step.depends_on,
            **{k: v for k, v in step.model_dump().items() if k not in ("id", "depends_on")},
        )
    for step_id in reopened & set(statuses):
        # Planned again: its old commit stays on disk until a new attempt replaces it.
        res.workspace.update_step(res.workspace.step(run, step_id), status="pending")
        emit("plan.reopened", run_id=state["run_id"], step_id=step_id)
    emit("plan.ready", run_id=state["run_id"], revision=revision, steps=len(plan.steps))
    res.workspace.update_run(run, status="running", plan_revision=revision)
    return {
        "plan": plan.model_dump(),
        "plan_revision": revision,
        "plan_feedback": "",
        "step_status": statuses,
        "status": "running",
        "usage": usage,
        "replans": state.get("replans", 0) + (1 if reason == "replan" else 0),
        "reopen": [],
    }


EARLIER_FAILURES = "Earlier attempts failed: "
"""How the evidence of a failed step's attempts starts in its description, on a kept plan."""
_EARLIER_CHARS = 600


def keep_last_plan(
    res: Resources, state: State, run: RunRef, problems: list[str], usage: dict[str, Any]
) -> dict[str, Any]:
    """The state update of a replan whose model gave no valid plan: the last valid plan stays.

    The step that failed is kept and planned again (pending, its failure count reset so it
    gets its attempts), with the evidence of its failures (``plan_feedback``, bounded) added
    to its description. The replan counts: a run cannot keep planning the same plan forever.
    """
    old = plan_of(state)
    failing = state.get("current_step")
    evidence = " ".join((state.get("plan_feedback") or "").split())
    if len(evidence) > _EARLIER_CHARS:
        evidence = evidence[: _EARLIER_CHARS - 1] + "…"
    steps = []
    for s in old.steps:
        if s.id == failing and evidence:
            # Only the latest evidence: an earlier kept plan's note is replaced, not stacked.
            base = s.description.split("\n\n" + EARLIER_FAILURES, 1)[0]
            s = s.model_copy(update={"description": f"{base}\n\n{EARLIER_FAILURES}{evidence}"})
        steps.append(s)
    why = (problems[0] if problems else "no reply")[:200]
    reason = f"replan: the planner's plans were invalid ({why}); the last valid plan is kept"
    emit("plan.kept", run_id=state["run_id"], step_id=failing, problems=problems)
    update = accept_plan(res, state, run, old.model_copy(update={"steps": steps}), reason, usage)
    update["replans"] = state.get("replans", 0) + 1
    if failing is not None and update["step_status"].get(failing) == "pending":
        update["failures"] = {failing: 0}
    return update


SINGLE_STEP_CRITERIA = (
    "impl.py implements exactly what the task asks (names and signatures as given)",
)


def single_step_plan(task: str) -> Plan:
    """The plan of a task done as one step: the step is the task.

    Used when the plan is held to one step (``max_plan_steps=1``), when the task is one unit
    (one function or class), and when the planner gave no valid plan.

    A model asked to plan one function only restates it (and small models still split it in
    two); the first replan, which has a failure to learn from, goes to the model.
    """
    # The task's own first line: a rules block carried before it names no step.
    own = own_task(task)
    first_line = next((line.strip() for line in own.splitlines() if line.strip()), "the task")
    title = first_line if len(first_line) <= 80 else first_line[:77].rstrip() + "..."
    return Plan(
        steps=[
            PlanStep(
                id="step1",
                title=title,
                description="Do the whole task above: the code in impl.py, its tests in test.py.",
                acceptance_criteria=list(SINGLE_STEP_CRITERIA),
                depends_on=[],
                expected_files=list(REQUIRED_FILES),
                defines=task_names(task),
            )
        ],
        rationale="the whole task is one step",
    )


def merge_into_one_step(plan: Plan) -> Plan:
    """A plan of several steps as one step (``max_plan_steps=1``), nothing dropped.

    Small models split even one function into "code" and "tests" steps and rarely obey a
    one-step limit when re-asked; joining the steps keeps every criterion and costs no call.
    """
    if len(plan.steps) <= 1:
        return plan
    first = plan.steps[0]
    return Plan(
        steps=[
            PlanStep(
                id=first.id,
                title=first.title,
                description="\n".join(f"- {s.title}: {s.description}" for s in plan.steps),
                depends_on=[],
                defines=list(dict.fromkeys(n for s in plan.steps for n in s.defines)),
                **_joined(plan.steps),
            )
        ],
        rationale=plan.rationale,
    )


def _joined(steps: list[PlanStep]) -> dict[str, Any]:
    """The criteria, checks and files of `steps` together, each once, in order."""
    return {
        "acceptance_criteria": list(dict.fromkeys(c for s in steps for c in s.acceptance_criteria)),
        "checks": list({c.describe(): c for s in steps for c in s.checks}.values()),
        "expected_files": list(dict.fromkeys(f for s in steps for f in s.expected_files)),
    }


def fold_repeated_steps(plan: Plan) -> Plan:
    """A step that defines only names earlier steps define, folded into the first of those.

    Small models often give "encode" and "decode" steps that both define both functions; the
    plan is invalid as proposed (a step that adds nothing new), and re-asking tends to return
    the same plan. Folding keeps every criterion and check of the repeated step and costs no
    call; a step depending on the folded one depends on the step it joined.
    """
    owner: dict[str, str] = {}
    kept: list[PlanStep] = []
    folded: dict[str, str] = {}
    for step in plan.steps:
        if step.defines and all(n in owner for n in step.defines):
            into = owner[step.defines[0]]
            i = next(k for k, s in enumerate(kept) if s.id == into)
            kept[i] = kept[i].model_copy(update=_joined([kept[i], step]))
            folded[step.id] = into
            continue
        for name in step.defines:
            owner.setdefault(name, step.id)
        kept.append(step)
    if not folded:
        return plan
    steps = []
    for step in kept:
        deps = [folded.get(d, d) for d in step.depends_on]
        deps = [d for d in dict.fromkeys(deps) if d != step.id]
        steps.append(step.model_copy(update={"depends_on": deps}))
    return Plan(steps=steps, rationale=plan.rationale, clauses=plan.clauses)


def _keep_committed(committed: list[PlanStep], plan: Plan) -> Plan:
    """Committed steps stay verbatim and first; the model's steps with their ids are dropped."""
    if not committed:
        return plan
    kept = {s.id for s in committed}
    rest = [s for s in plan.steps if s.id not in kept]
    return Plan(steps=[*committed, *rest], rationale=plan.rationale, clauses=plan.clauses)


def task_names(task: str) -> list[str]:
    """The functions and classes a task asks for: those its code defines, else those it names."""
    in_code = [n for block in code_blocks(task) for n in defined_in_code(block)]
    named = without_methods(task, without_shorthands(named_in_text(task)))
    return list(dict.fromkeys(in_code)) or named


def single_unit(task: str) -> bool:
    """Whether the task asks for one function, or one class (its methods are not units)."""
    names = task_names(task)
    classes = [n for n in names if n[:1].isupper()]
    functions = [n for n in names if not n[:1].isupper()]
    if not classes:
        return len(functions) == 1
    standalone = [n for n in functions if re.search(STANDALONE.format(n=re.escape(n)), task)]
    return len(classes) == 1 and not standalone


MAX_UNPLANNED_NAMES = 4
"""Most names a task may ask for and still be one step planned by code (none ordered)."""
MAX_UNPLANNED_CHARS = 2000
"""Longest task planned as one step by code when it asks for more than one unit."""
_ORDERED = re.compile(
    r"\bstep\s*\d|^\s*\d+[.)]\s|(?:^|[.;:]\s+)(?:first|then|next|finally|afterwards|after that)\b"
    r"|\bbuil(?:ds?|t) on\b|\bon top of\b|\bin terms of\b"
    r"|\b(?:uses?|using|calls?|calling)\s+(?:them|both|these|those|the others?)\b",
    re.IGNORECASE | re.MULTILINE,
)
"""How a task orders its parts: numbered steps, "first … then …", one built on (or using)
others."""


def one_step_task(task: str) -> bool:
    """Whether `task` is one step, planned by code: no plan call is worth its seconds.

    One function or class (:func:`single_unit`); or a few names (at most
    :data:`MAX_UNPLANNED_NAMES`, one class at most) of the one module, in a task of at most
    :data:`MAX_UNPLANNED_CHARS` that orders nothing: no numbered steps or "first … then …",
    and no name said to use another. Such a task's plan is the task; asked, a small model
    restates it as one step, at the cost of a long reply.
    """
    if single_unit(task):
        return True
    names = task_names(task)
    if not names or len(names) > MAX_UNPLANNED_NAMES or len(task) > MAX_UNPLANNED_CHARS:
        return False
    if sum(1 for n in names if n[:1].isupper() and not n.endswith(_NOT_UNITS)) > 1:
        return False
    return not _ORDERED.search(task) and not _uses_another(task, names)


_NOT_UNITS = ("Error", "Exception", "Warning")
"""Classes that are no unit of work of their own: an exception a module defines."""


def _uses_another(task: str, names: list[str]) -> bool:
    """Whether the task says one of `names` uses, calls or is built from another."""
    for a in names:
        for b in names:
            if a != b and re.search(
                rf"\b{re.escape(a)}\b[^.;]*\b(?:uses?|using|calls?|calling|via|reuses?)\s+"
                rf"`?{re.escape(b)}\b",
                task,
            ):
                return True
    return False


def finalize_plan(plan: Plan, task: str, *, committed: list[PlanStep] | None = None) -> Plan:
    """Code's share of planning, whatever the model proposed.

    A task that asks for one function or class is one step. Steps that do not say what they
    define get the names their checks call or their text names. The task's clauses are found
    by code (:func:`task_clauses`), and the checks code reads from them (signatures, examples,
    errors, properties) join the step that defines what they use.
    """
    if not committed and len(plan.steps) > 1 and single_unit(own_task(task)):
        plan = merge_into_one_step(plan)
    names = task_names(task)
    steps = [
        s if s.defines else s.model_copy(update={"defines": _inferred_defines(s, names)})
        for s in plan.steps
    ]
    kept = {s.id for s in committed or []}
    clauses = task_clauses(task, names=names)
    rules = rule_clauses(task, clauses)
    steps = [
        s.model_copy(update={"checks": [placed(c, task, clauses, rules) for c in s.checks]})
        for s in steps
    ]
    stated: dict[int, list[Check]] = {}
    for check in (c for clause in clauses for c in clause.checks):
        used = set(free_names(check.call))
        target = next(
            (i for i, s in enumerate(steps) if s.id not in kept and used & set(s.defines)),
            None,
        )
        if target is not None and not any(
            c.describe() == check.describe() for c in steps[target].checks
        ):
            stated.setdefault(target, []).append(check)
    for target, checks in stated.items():
        step = steps[target]
        criteria = list(step.acceptance_criteria)
        for criterion in dict.fromkeys(c.criterion for c in checks):
            if criterion not in criteria:
                criteria.append(criterion)
        steps[target] = step.model_copy(
            update={"checks": [*checks, *step.checks], "acceptance_criteria": criteria}
        )
    return Plan(steps=steps, rationale=plan.rationale, clauses=clauses)


def _inferred_defines(step: PlanStep, task_level: list[str]) -> list[str]:
    """What a step defines when the model did not say: names its checks call, or its text names."""
    called = [n for c in step.checks for n in called_names(c.call)]
    named = named_in_text(f"{step.title}\n{step.description}")
    preferred = [n for n in [*called, *named] if n in task_level]
    return list(dict.fromkeys(preferred or named))
