"""Graph state and the structured outputs of the planner and reflector.

State holds only serialisable values and small references (ids, verdict summaries): files,
histories and test output live in the workspace tree, so checkpoints stay small.
"""

from __future__ import annotations

import operator
import re
from collections import deque
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

STEP_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_PLAN_STEPS = 12

StepStatus = Literal["pending", "committed", "failed", "blocked"]
RunStatus = Literal["planning", "running", "done", "failed", "budget_exhausted", "rejected"]


IMPL_FILE = "impl.py"
"""The module every step writes (tests and later steps import it as ``impl``)."""
TEST_FILE = "test.py"
"""The pytest file every step writes beside its impl.py."""
REQUIRED_FILES = (IMPL_FILE, TEST_FILE)
"""What every attempt must leave in its staging area (the required-files contract)."""


class Check(BaseModel):
    """One executable acceptance check: a call and the result (or exception) it must give.

    Written before any code (by the planner, extracted from the task by code, or edited by a
    user at plan approval) and run by the reflector against the staged code in the sandbox.
    """

    call: str = Field(
        description="a Python expression calling the step's code, e.g. \"initials('ada b')\"; "
        "setup statements may come first, one per line, the last line is the expression"
    )
    expect: str = Field(
        default="",
        description="a Python expression for the expected result, e.g. \"'AB'\" "
        "(empty when `raises` is set)",
    )
    raises: str = Field(
        default="", description="the exception class the call must raise, e.g. 'ValueError'"
    )
    criterion: str = Field(
        default="", description="the acceptance criterion this check proves (verbatim)"
    )
    origin: Literal["task", "planner", "user", "own"] = Field(
        default="planner",
        description="who wrote it: stated in the task (extracted by code), the planner, a user, "
        "or the executor's own tests (the asserts a draft wrote after its code)",
    )
    clause: str = Field(
        default="", description="the id of the task's clause this check executes ('' if none)"
    )
    label: str = Field(
        default="",
        description="how a person reads it where the call is generated code (a Hypothesis "
        "test): what it draws and what must hold ('' for a plain call)",
    )

    def describe(self) -> str:
        """``call == expect`` / ``call raises X``, on one line (the label, where it has one)."""
        if self.label:
            return self.label
        call = " ; ".join(line.strip() for line in self.call.strip().splitlines())
        return f"{call} raises {self.raises}" if self.raises else f"{call} == {self.expect}"


class ProposedStep(BaseModel):
    """One step of a plan as the planner model proposes it: a unit of code with its tests."""

    id: str = Field(description="short unique slug, e.g. 'lru-core' (lowercase, digits, - or _)")
    title: str = Field(description="a short title")
    description: str = Field(description="what to build in this step, precisely")
    acceptance_criteria: list[str] = Field(
        description="checkable statements that must hold when the step is done (at least one)"
    )
    depends_on: list[str] = Field(
        default_factory=list, description="ids of earlier steps whose code this step uses"
    )
    defines: list[str] = Field(
        default_factory=list,
        description="the public functions and classes this step's impl.py defines (names)",
    )


class PlanStep(ProposedStep):
    """One step of a plan: a unit of code, its tests, and its contract (executable checks)."""

    expected_files: list[str] = Field(
        default_factory=lambda: list(REQUIRED_FILES),
        description="files the step writes; impl.py and test.py at least",
    )
    checks: list[Check] = Field(
        default_factory=list,
        description="executable checks of the acceptance criteria: calls with their expected "
        "results or exceptions",
    )
    target: str = Field(
        default="",
        description="in a run on a project: the definition the step changes, "
        "'path/in/project.py::Class.method' ('' in a new package)",
    )


class ProposedPlan(BaseModel):
    """The planner model's answer: ordered steps forming a DAG (code adds the contracts)."""

    steps: list[ProposedStep] = Field(description="the steps, in an order that respects depends_on")
    rationale: str = Field(default="", description="why the task is split this way, briefly")

    def to_plan(self) -> Plan:
        """The plan these steps make (no checks yet)."""
        return Plan(
            steps=[PlanStep(**s.model_dump()) for s in self.steps], rationale=self.rationale
        )


class Clause(BaseModel):
    """One clause of the task (a sentence or part of one) and the checks code read from it."""

    id: str = Field(description="c1, c2, … in the order of the task")
    text: str = Field(description="the clause as the task writes it")
    kind: Literal["signature", "example", "error", "property", "behaviour"] = Field(
        description="what it states; behaviour clauses are prose code reads no check from"
    )
    checks: list[Check] = Field(
        default_factory=list, description="the checks code read from it (origin: task)"
    )
    rules: list[str] = Field(
        default_factory=list,
        description="the rules of verification.rules.RULES that built its checks, in order",
    )


class Plan(BaseModel):
    """The planner's output: ordered steps forming a DAG."""

    steps: list[PlanStep] = Field(description="the steps, in an order that respects depends_on")
    rationale: str = Field(default="", description="why the task is split this way, briefly")
    clauses: list[Clause] = Field(
        default_factory=list,
        description="the task's clauses (found by code); each check names the one it executes",
    )


def plan_problems(plan: Plan, *, max_steps: int = MAX_PLAN_STEPS) -> list[str]:
    """Everything wrong with `plan` (empty when it may run): the reasons sent back to the model."""
    problems: list[str] = []
    if not plan.steps:
        return ["the plan has no steps"]
    if len(plan.steps) > max_steps:
        problems.append(f"the plan has {len(plan.steps)} steps; at most {max_steps} are allowed")
    ids = [s.id for s in plan.steps]
    seen: set[str] = set()
    for step in plan.steps:
        if not STEP_ID.match(step.id):
            problems.append(
                f"step id {step.id!r} is invalid: use 1-40 lowercase letters, digits, - or _"
            )
        if step.id in seen:
            problems.append(f"step id {step.id!r} is used twice")
        seen.add(step.id)
        if not step.title.strip():
            problems.append(f"step {step.id!r} has an empty title")
        if not [c for c in step.acceptance_criteria if c.strip()]:
            problems.append(f"step {step.id!r} has no acceptance criteria")
        for dep in step.depends_on:
            if dep == step.id:
                problems.append(f"step {step.id!r} depends on itself")
            elif dep not in ids:
                problems.append(f"step {step.id!r} depends on unknown step {dep!r}")
    if not problems:
        cycle = find_cycle(plan)
        if cycle:
            problems.append("the dependencies form a cycle: " + " -> ".join(cycle))
    if not problems:
        problems += _definition_problems(plan)
    return problems


def _definition_problems(plan: Plan) -> list[str]:
    """Every step adds a public function or class; redefining one means building on it."""
    problems: list[str] = []
    defined_by: dict[str, str] = {}
    for step in plan.steps:
        if not step.defines:
            problems.append(
                f"step {step.id!r} defines no public function or class: every step adds code "
                "(tests go into the step whose code they test, never into a step of their own)"
            )
            continue
        earlier = {n: defined_by[n] for n in step.defines if n in defined_by}
        if len(earlier) == len(set(step.defines)):
            problems.append(
                f"step {step.id!r} adds no new public behaviour: "
                f"{', '.join(sorted(earlier))} are defined by earlier steps; merge it into them"
            )
        for name, owner in sorted(earlier.items()):
            if owner not in _ancestors(plan, step.id):
                problems.append(
                    f"step {step.id!r} redefines {name} of step {owner!r}: it must depend on "
                    f"{owner!r} and import it"
                )
        for name in step.defines:
            defined_by.setdefault(name, step.id)
    return problems


def _ancestors(plan: Plan, step_id: str) -> set[str]:
    deps = {s.id: set(s.depends_on) for s in plan.steps}
    found: set[str] = set()
    frontier = set(deps.get(step_id, set()))
    while frontier:
        found |= frontier
        frontier = {d for f in frontier for d in deps.get(f, set())} - found
    return found


def find_cycle(plan: Plan) -> list[str]:
    """A dependency cycle as a list of ids (first id repeated at the end), or []."""
    deps = {s.id: list(s.depends_on) for s in plan.steps}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for dep in deps.get(node, []):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep in deps and state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in deps:
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return []


def topological_order(plan: Plan) -> list[str]:
    """Step ids in dependency order, ties broken by the plan's own order (plan must be valid)."""
    position = {s.id: i for i, s in enumerate(plan.steps)}
    indegree = {s.id: len(set(s.depends_on)) for s in plan.steps}
    users: dict[str, list[str]] = {s.id: [] for s in plan.steps}
    for s in plan.steps:
        for dep in set(s.depends_on):
            users[dep].append(s.id)
    ready = deque(sorted((i for i, d in indegree.items() if d == 0), key=position.__getitem__))
    order: list[str] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for user in sorted(users[node], key=position.__getitem__):
            indegree[user] -= 1
            if indegree[user] == 0:
                ready.append(user)
    return order


def outline(plan: Plan, statuses: dict[str, Any] | None = None) -> str:
    """One line per step, for prompts."""
    lines = []
    for s in plan.steps:
        deps = f" (after {', '.join(s.depends_on)})" if s.depends_on else ""
        status = f" [{statuses[s.id]}]" if statuses and s.id in statuses else ""
        lines.append(f"- {s.id}: {s.title}{deps}{status}")
    return "\n".join(lines)


class DraftCandidate(TypedDict):
    """One candidate an attempt drafted, as the reflector reads it from the state."""

    k: int
    """Its number in the attempt (0 = the first draft, or candidate zero)."""
    informed: bool
    """Written after seeing check results, so never an independent witness."""
    passed: bool
    """It met every runnable check that is not suspect."""
    folder: str | None
    """Its folder (holding its ``impl.py``) relative to the attempt's folder, e.g.
    ``candidates/1``; None when the reply had no code to run."""


class DraftsSummary(TypedDict):
    """What an attempt's drafting left for the reflector: its candidates and the one kept.

    The executor returns it as the ``drafts`` field of the state; ``drafts.json`` in the
    attempt's folder is the fuller record for people and evals (prompt, temperatures,
    contract summaries), which no node reads back.
    """

    step_id: str
    """The step the attempt belongs to."""
    attempt: int
    """The attempt's number."""
    kept: int | None
    """The number of the candidate staged as the attempt's impl.py (None if none was)."""
    candidates: list[DraftCandidate]
    """Every candidate, in the order they were written."""
    cut: str
    """Why fewer witnesses were heard than the profile asks (the run's time limit refused the
    next one), '' when none was refused."""


def _merge(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {**left, **right}


def _add_usage(left: dict[str, float], right: dict[str, float]) -> dict[str, float]:
    out = dict(left)
    for key, value in right.items():
        out[key] = out.get(key, 0) + value
    return out


CallRows = dict[str, dict[str, float]]
"""Model calls by purpose: ``{purpose: {"calls", "input_tokens", "output_tokens", "seconds",
"capped"}}``, ``capped`` the calls that ran to their ``max_tokens``
(:mod:`atom_agent.models.ledger`)."""


def add_call_rows(left: CallRows, right: CallRows) -> CallRows:
    """Two tallies of model calls by purpose, summed (the reducer of ``State.calls``)."""
    out = {purpose: dict(row) for purpose, row in left.items()}
    for purpose, row in right.items():
        mine = out.setdefault(purpose, {})
        for key, value in row.items():
            mine[key] = round(mine.get(key, 0) + value, 3)
    return out


class State(TypedDict, total=False):
    """The graph's state: the task, the plan, per-step progress, budgets and the outcome."""

    task: str
    """The software task, as the user gave it."""
    run_id: str
    """Run id: the directory `runs/<run_id>/` and the memory session id."""
    plan: dict[str, Any] | None
    """The current plan (`Plan.model_dump()`), None before planning."""
    plan_revision: int
    """Revision number of the current plan in plan.json (1 = first plan)."""
    plan_feedback: str
    """Why the plan is being (re)made: invalid-plan reasons, a failed step, a reviewer's note."""
    step_status: dict[str, StepStatus]
    """Status of every step of the current plan (always written whole: a replan drops steps)."""
    attempts: Annotated[dict[str, int], _merge]
    """The latest attempt number per step id (the running attempt's while it runs)."""
    failures: Annotated[dict[str, int], _merge]
    """Failed attempts per step id (questions to the user do not count)."""
    decision: Literal["commit", "retry", "replan", "fail"] | None
    """The reflector's last decision, for routing."""
    rules: list[str]
    """The ids of the project rules the run's task text carries (earlier ones, then its own)."""
    used_memories: list[str]
    """Ids of the long-term memories in the current attempt's prompt (reinforced on pass)."""
    used_memory_reasons: dict[str, str]
    """Why each of `used_memories` is in the prompt (id → ``shares name hex_decode``)."""
    memories_written: Annotated[list[str], operator.add]
    """Ids of the long-term memories this run wrote."""
    learned: Annotated[list[dict[str, Any]], operator.add]
    """What the reflector's verdicts taught, as :meth:`MemoryChanges.to_data` values in order:
    kept in the checkpoint and written to long-term memory by the finish node in one write."""
    candidates: Annotated[list[dict[str, Any]], operator.add]
    """Working-memory candidates noticed during the run (promoted at the end)."""
    current_step: str | None
    """The step the executor / reflector is working on."""
    replans: int
    """Replans done so far in this run."""
    reopen: list[str]
    """Committed steps the evidence implicates (a later step's checks fail in their code): the
    next replan plans them again instead of keeping them."""
    usage: Annotated[dict[str, float], _add_usage]
    """Accumulated model usage: input_tokens, output_tokens, total_tokens, cost_usd, model_calls."""
    calls: Annotated[CallRows, add_call_rows]
    """The run's model calls by what they were for: calls, tokens and seconds of each."""
    started_at: float
    """Unix time the run started (for the wall-clock budget)."""
    question: str | None
    """A question the executor asked the user, until it is answered."""
    answers: Annotated[list[dict[str, str]], operator.add]
    """Questions asked and the user's answers, in order (shown to later attempts)."""
    status: RunStatus
    """Where the run is: planning, running, or its outcome."""
    stop_reason: str
    """Why the run stopped (the budget exhausted, the step that failed, …)."""
    report_path: str | None
    """The run's report.md, once the run has finished."""
    drafts: DraftsSummary | None
    """The running attempt's drafted candidates (None when it drafted none): the reflector's
    independent witnesses."""
    plain: str | None
    """Candidate zero: the code of the model's plain answer to the whole task ('' when the
    reply had none; None before it was asked or when candidate zero is off)."""
    attempt_seconds: float | None
    """How long the last attempt's executor took (seconds): the reflector starts no attempt the
    run's time limit would cut before it ends."""
    plain_seconds: float | None
    """How long the plain answer's call took (None when it was not asked in this run): the
    tool loop's and the run's time limits are multiples of it (``Context.loop_time_factor``,
    ``Context.run_time_factor``)."""
    result_dir: str | None
    """The deliverable (``runs/<id>/result/``: one package with its tests), once the run has
    finished with at least one committed step; None otherwise."""


class InputState(TypedDict, total=False):
    """What a caller passes to start a run."""

    task: str
    run_id: str
