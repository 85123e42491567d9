"""The executor node: one attempt of one step, drafts first or a ReAct loop on tiered context."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError
from langgraph.graph.state import CompiledStateGraph

from atom_agent.budget import now
from atom_agent.checks.contract import check_problems, contract_tests
from atom_agent.checks.own import load_own, save_own
from atom_agent.context import Context
from atom_agent.models.profiles import ModelProfile, profile_for
from atom_agent.models.purpose import calling, for_attempt
from atom_agent.names import defined_in_code
from atom_agent.prompts import prompt_text, register
from atom_agent.resources import Resources
from atom_agent.selection.drafts import (
    dependency_exports,
    dependency_lines,
    draft_prompt,
    failure_lines,
    temperatures,
    write_drafts,
)
from atom_agent.selection.pool import ContractProver, Drafts
from atom_agent.session import SessionContext
from atom_agent.state import IMPL_FILE, TEST_FILE, Check, DraftsSummary, Plan, PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.tools.calls import ToolCalls
from atom_agent.usage import model_name_of, usage_of
from atom_agent.workspace import AttemptRef, StepRef, Workspace
from atom_agent.workspace.atomic import atomic_write_json, atomic_write_text

from ..common import (
    AttemptScope,
    attempt_scope,
    available_names,
    plan_of,
    python_ident,
    run_ref,
    seconds_left,
    step_session,
    unfinished_attempt,
)
from .attempt import ASK_USER, AttemptContext
from .prompt import ExecutorPrompt, draft_notes, reconstruct_context
from .steering import steering
from .steering.chain import Steering
from .steering.reask import REASKED
from .steering.stop import without_stop
from .tools import NoQuestions, ask_user_tool, executor_tools

logger = logging.getLogger(__name__)

EXECUTOR_SYSTEM = register(
    "EXECUTOR_SYSTEM",
    """\
You are the executor of a coding agent. You implement ONE step of a plan by writing files \
with your tools, then you run the tests to check your work.

Rules:
- Write the implementation to `impl.py` and pytest tests to `test.py` (relative paths). \
`test.py` imports from `impl` (e.g. `from impl import lru_cache`).
- Compute results; never hard-code expected outputs (no large string literals or lookup \
tables standing in for logic).
- Tests must check every acceptance criterion. Run them with `run_tests`; fix and re-run \
until they pass.
- Code of earlier steps is readable at the dependency paths given; import it by putting \
nothing special: those directories are on the Python path when tests run.
- Use `remember` for a lesson or decision worth keeping for later steps; `recall` to look \
up what earlier steps learned.
- {ambiguity}
- When the tests pass, stop: answer with a one-line summary.""",
)

EXECUTOR_ASK = register(
    "EXECUTOR_ASK",
    "Only if the task is ambiguous in a way you cannot resolve, call `ask_user` with one "
    "precise question.",
)

EXECUTOR_DECIDE = register(
    "EXECUTOR_DECIDE",
    "Nobody can answer questions in this run: where the task is ambiguous, decide, and state "
    "what you assumed in a comment in impl.py.",
)


def executor_system(*, ask: bool) -> str:
    """The executor's system prompt (:data:`EXECUTOR_SYSTEM`, or the user's replacement).

    ``{ambiguity}`` becomes the line on questions (`ask`: the ask_user tool is offered).
    """
    ambiguity = prompt_text("EXECUTOR_ASK") if ask else prompt_text("EXECUTOR_DECIDE")
    return prompt_text("EXECUTOR_SYSTEM").format(ambiguity=ambiguity)


EXECUTOR_START = register(
    "EXECUTOR_START",
    """\
impl.py already holds this code, one plain answer to the task:
```python
{code}
```
Run against the step's checks (test.py, read-only): {summary}.
{failures}
Fix what fails in impl.py (edit_file or write_file), then run_tests.""",
)


def make_executor(res: Resources) -> Any:
    """The executor node, closed over the run's resources.

    The node's ReAct agent is compiled on its first tool loop and kept here, in the node's
    closure (one per model and tool set): an attempt only differs in what it passes as
    ``context=`` (:class:`AttemptContext`: its scope, session, sandbox and budget).
    """
    agents: dict[tuple[tuple[str, ...], str], tuple[BaseChatModel, Agent]] = {}

    def agent_for(model: BaseChatModel, tools: list[BaseTool]) -> Agent:
        # Read at every tool loop: the run's prompts (its replacements, what it sent).
        tools = [ask_user_tool() if t.name == ASK_USER else t for t in tools]
        system = executor_system(ask=any(t.name == ASK_USER for t in tools))
        key = (tuple(t.name for t in tools), system)
        known = agents.get(key)
        if known is None or known[0] is not model:
            known = agents[key] = (model, attempt_agent(model, tools, system))
        return known[1]

    def attempt(state: State) -> dict[str, Any]:
        at = _this_attempt(res, state)
        with for_attempt(at.step.id, at.attempt.n):
            if at.profile.draft_first:
                # The attempt is its drafts, checked or not; the reflector proves them.
                drafts, notes = _draft(res, state, at)
                done = "draft passed" if _passed(drafts) else "drafts only"
                return _finish_attempt(res, state, at, drafts, drafts.spent, None, done, notes)
            # The tool loop starts from the step's best code so far, staged for it to edit:
            # the plain answer, or what the previous attempt kept; never from less than one
            # plain call.
            start = _stage_start(res, at, *_start(res, state, at))
            if start is not None and _passed(start):
                # The code met every check: the attempt is that code, and the reflector proves it.
                return _finish_attempt(res, state, at, start, start.spent, None, "start passed", {})
            return _tool_path(res, state, at, start, agent_for(at.model, at.tools))

    def executor(state: State) -> dict[str, Any]:
        # How long the attempt took is what the reflector expects the next one to take.
        began = now()
        update = attempt(state)
        return {**update, "attempt_seconds": round(now() - began, 3)}

    return executor


def _passed(drafts: Drafts) -> bool:
    """Whether the drafted or staged code kept met every check."""
    best = drafts.best
    return best is not None and drafts.passes(best)


def _tool_path(
    res: Resources, state: State, at: _Attempt, drafts: Drafts | None, agent: Agent
) -> dict[str, Any]:
    """The ReAct tool loop on the attempt, from its staged start (if any); never worse than it."""
    prompt = _loop_prompt(res, state, at, drafts)
    context = AttemptContext(
        session=at.session,
        scope=_loop_scope(at),
        runner=res.runner,
        limits=res.limits,
        memory=res.memory,
        max_tool_calls=res.ctx.max_tool_calls,
        start_passed=_start_passed(drafts),
        time_limit_s=_loop_time(res.ctx, state),
    )
    messages, stopped = _run(agent, prompt.text, context)
    if drafts is not None:
        kept = _stage_pool_choice(at, drafts)
        stopped = "; ".join(why for why in (stopped, kept) if why)
        messages = [*drafts.spent, *messages]
    # Only a run that offered the tool waits on a question: an unattended one decides itself.
    question = _question(messages) if any(t.name == ASK_USER for t in at.tools) else None
    return _finish_attempt(
        res, state, at, drafts, messages, question, stopped, prompt.memory_reasons
    )


@dataclass(frozen=True)
class _Attempt:
    """One attempt of one step, as the executor works on it."""

    plan: Plan
    step: PlanStep
    step_ref: StepRef
    attempt: AttemptRef
    session: SessionContext
    scope: AttemptScope
    model: BaseChatModel
    profile: ModelProfile
    tools: list[BaseTool]
    runnable: list[Check]
    """The step's checks that can run (what they use is defined by the step or its deps)."""
    available: list[str]


def _this_attempt(res: Resources, state: State) -> _Attempt:
    """The current step's attempt to work on: the unfinished one (after a crash) or a new one."""
    ctx = res.ctx
    plan = plan_of(state)
    step_id = state.get("current_step")
    step = next((s for s in plan.steps if s.id == step_id), None)
    if step is None:
        raise RuntimeError(f"executor: current step {step_id!r} is not in the plan")
    step_ref = res.workspace.step(run_ref(res, state), step.id)
    attempt = unfinished_attempt(res.workspace, step_ref) or res.workspace.new_attempt(step_ref)
    model = res.model("executor")
    profile = profile_for(model, ctx.model_profile)
    available = available_names(res.workspace.dependency_artifacts(step_ref))
    return _Attempt(
        plan=plan,
        step=step,
        step_ref=step_ref,
        attempt=attempt,
        session=step_session(state, ctx, step.id, attempt.n),
        scope=attempt_scope(res.workspace, step_ref, attempt),
        model=model,
        profile=profile,
        # A bad setting fails here.
        tools=executor_tools(ctx.executor_tools, ask_user=ctx.ask_user),
        runnable=[
            c
            for c in step.checks
            if not check_problems(c, defines=step.defines, available=available)
        ],
        available=available,
    )


def _first(state: State, at: _Attempt) -> str | None:
    """Candidate zero on a step's first attempt (the plain answer, if it covers the step)."""
    return _candidate_zero(state.get("plain"), at.step.defines) if at.attempt.n == 1 else None


def _task_samples(res: Resources, state: State, first: str | None) -> list[str]:
    """Candidate zero's whole-task samples but `first`: witnesses drawn already, at no call.

    Written by the planner (``runs/<id>/plain/samples/<k>/impl.py``) from the plain prompt,
    never shown a check. None without candidate zero: its samples answer the whole task.
    """
    if first is None:
        return []
    folder = res.workspace.plain_dir(run_ref(res, state)) / "samples"
    sources = (
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.glob("*/impl.py"))
    )
    return [s for s in sources if s.strip() and s != first]


def _start(res: Resources, state: State, at: _Attempt) -> tuple[str | None, str]:
    """The tool loop's start and its origin.

    The code the step's previous attempt staged (its best), else the plain answer (candidate
    zero, on a first attempt).
    """
    earlier = _incumbent(res.workspace, at)
    if earlier and earlier.strip():
        return earlier, "earlier"
    return _candidate_zero(state.get("plain"), at.step.defines), "plain"


def _loop_prompt(
    res: Resources, state: State, at: _Attempt, start: Drafts | None
) -> ExecutorPrompt:
    """The tool loop's first message: the tiered context reconstruction of the attempt.

    A staged start is shown in it with the checks it fails, so the first call can fix it.
    """
    scope = _loop_scope(at)
    first = start.candidates[0] if start is not None and start.candidates else None
    shown = first is not None and first.report is not None
    files = dataclasses.replace(scope, started=scope.started and not shown).describe()
    if first is not None and first.report is not None:
        files += "\n\n" + prompt_text("EXECUTOR_START").format(
            code=first.source.strip(),
            summary=first.report.summary(),
            failures=failure_lines(first.report, set(start.suspect) if start else None),
        )
    prompt = reconstruct_context(
        ctx=res.ctx,
        task=state["task"],
        plan=at.plan,
        step=at.step,
        statuses=dict(state.get("step_status") or {}),
        workspace=res.workspace,
        step_ref=at.step_ref,
        attempt=at.attempt,
        files_text=files,
        memory=res.memory,
        session=at.session,
        answers=list(state.get("answers") or []),
    )
    emit(
        "executor.attempt",
        run_id=state["run_id"],
        step_id=at.step.id,
        attempt=at.attempt.n,
        prompt_tokens=prompt.tokens,
        memories=len(prompt.memory_reasons),
        unrelated_memories=len(prompt.unrelated),
    )
    return prompt


def _loop_scope(at: _Attempt) -> AttemptScope:
    """The attempt's scope as the tool loop sees it: a staged start, the checks read-only."""
    return dataclasses.replace(
        at.scope,
        started=(at.attempt.staging / IMPL_FILE).is_file(),
        read_only=frozenset({TEST_FILE}) if (at.attempt.path / _CHECKS_MARK).is_file()
        else frozenset(),
    )  # fmt: skip


_CHECKS_MARK = "checks-staged"
"""Beside staging: test.py was staged from the step's checks (read-only for the tool loop)."""


def _stage_start(
    res: Resources, at: _Attempt, source: str | None, origin: str = "plain"
) -> Drafts | None:
    """Stage `source` as the tool loop's starting impl.py, run on the step's checks.

    With runnable checks the checks go beside it as test.py (read-only for the loop), and
    the returned :class:`Drafts` holds `source` as its only candidate: when it meets every
    check the attempt is that code, with no tool loop at all.
    """
    if not source:
        return None
    staging = at.attempt.staging
    atomic_write_text(staging / IMPL_FILE, source)
    if not at.runnable:
        return None
    # The attempt's record starts with the code it starts from (no model call: the plain
    # answer's call is the planner's); the tool loop's code is offered to the same pool after.
    drafts = Drafts(messages=[AIMessage(content=f"```python\n{source.rstrip()}\n```")],
                    prove=_prover(res, at, at.runnable))  # fmt: skip
    start = drafts.offer(source, origin=origin, temperature=0.0, informed=origin != "plain")
    atomic_write_text(staging / IMPL_FILE, start.source)  # as proved (dependencies imported)
    atomic_write_text(staging / TEST_FILE, contract_tests(at.runnable))
    atomic_write_text(at.attempt.path / _CHECKS_MARK, "")
    return drafts


def _prover(res: Resources, at: _Attempt, checks: list[Check]) -> ContractProver:
    """How the attempt's candidates are proved: `checks` run on each in its own folder.

    A candidate's own copies of what the step's dependencies define become imports of them.
    """
    artifacts = res.workspace.dependency_artifacts(at.step_ref)
    return ContractProver(
        folder=at.attempt.path / "candidates",
        checks=checks,
        defines=at.step.defines,
        available=at.available,
        python_path=at.scope.python_path()[1:],
        runner=res.runner,
        limits=res.limits,
        exports=dependency_exports(artifacts, _dependency_module),
    )


def _dependency_module(dep_id: str) -> str:
    """The module a step's code imports a dependency's committed code from."""
    return f"deps.{python_ident(dep_id)}.impl"


LOOP_MIN_SECONDS = 20.0
"""The least time a limited tool loop gets: a fast model's calls take seconds each."""


def _loop_time(ctx: Context, state: State) -> float | None:
    """The tool loop's time limit: ``loop_time_factor`` × the plain answer's seconds.

    Never more than the run's time limit leaves (:func:`~atom_agent.nodes.common.time_limit`):
    the loop stops there by itself, so what it staged is still proven. None (no limit) when
    neither applies: the factors are 0, or the plain answer's cost is not known (not asked in
    this run, or answered in under a second: a replayed or scripted call costs nothing real).
    """
    plain = state.get("plain_seconds") or 0.0
    loop = None
    if ctx.loop_time_factor and plain >= 1.0:
        loop = max(ctx.loop_time_factor * plain, LOOP_MIN_SECONDS)
    left = seconds_left(state, ctx)
    if left is None:
        return loop
    return max(0.0, left) if loop is None else min(loop, max(0.0, left))


def _start_passed(drafts: Drafts | None) -> int | None:
    """How many of the staged checks the staged start passes (None: no start was run)."""
    first = drafts.candidates[0] if drafts is not None and drafts.candidates else None
    return len(first.report.passed) if first is not None and first.report is not None else None


def _stage_pool_choice(at: _Attempt, drafts: Drafts) -> str:
    """After the loop: the loop's code is offered to the pool; staged is what the pool keeps.

    The step's checks are staged again too (sandboxed code could have rewritten them).
    Returns why the start was kept ('' when the loop's code stays).
    """
    staging, start = at.attempt.staging, drafts.candidates[0]
    atomic_write_text(staging / TEST_FILE, contract_tests(at.runnable))
    impl = staging / IMPL_FILE
    written = impl.read_text(encoding="utf-8", errors="replace") if impl.is_file() else ""
    if written == start.source:
        return ""
    # Offered after the start, the loop's code is kept only when it executes better.
    if written.strip():
        loop = drafts.offer(written, origin="tool loop", informed=True)
        if drafts.best is loop:
            if loop.source != written:  # as proved (dependencies imported)
                atomic_write_text(impl, loop.source)
            return ""
    atomic_write_text(impl, start.source)
    return f"kept the {start.origin} code: the tool loop's executes worse on the step's checks"


def _finish_attempt(
    res: Resources,
    state: State,
    at: _Attempt,
    drafts: Drafts | None,
    messages: list[BaseMessage],
    question: str | None,
    stopped: str,
    used: dict[str, Any],
) -> dict[str, Any]:
    """Record the attempt (history.json, a question's verdict, telemetry) and its update."""
    res.workspace.write_history(at.attempt, messages, attempt_figures(messages, stopped, at.model),
                                memories=state.get("rules"))  # fmt: skip
    if question:
        # The attempt ends with a question, not a verdict; tier 1 shows it to the next one.
        res.workspace.write_verdict(
            at.attempt,
            {"outcome": "asked the user", "decision": "ask_user", "feedback": question},
        )
    emit(
        "executor.done",
        run_id=state["run_id"],
        step_id=at.step.id,
        attempt=at.attempt.n,
        tool_calls=sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage)),
        question=question,
        stopped=stopped,
    )
    return {
        "attempts": {at.step.id: at.attempt.n},
        # The reflector's witnesses travel in the state (checkpointed with it).
        "drafts": _summary(drafts, at.step.id, at.attempt) if drafts is not None else None,
        "usage": usage_of(messages, model_name_of(at.model)),
        "question": question,
        # Only what reached a prompt: the gate's rejects are neither reinforced nor blamed.
        "used_memories": list(used),
        "used_memory_reasons": used,
    }


Agent = CompiledStateGraph[Any, Any, Any, Any]


def attempt_figures(
    messages: Sequence[BaseMessage], stopped: str, model: BaseChatModel
) -> dict[str, Any]:
    """What an attempt's model and tool calls came to, for history.json and evaluations.

    ``broken_calls`` counts replies whose tool call could not be used (re-asked, or left
    invalid); ``recovered_calls`` calls the model wrote as text; ``tool_errors`` calls that
    came back as errors (unknown tool, bad arguments, a refused path); ``largest_prompt`` the
    most prompt tokens one call took, beside the model's context window where it states one.
    """
    replies = [m for m in messages if isinstance(m, AIMessage)]
    meta = [m.response_metadata or {} for m in replies]
    reasked = sum(int(x.get(REASKED, 0)) for x in meta)
    window = getattr(model, "n_ctx", None)
    return {
        "model_calls": sum(m.usage_metadata is not None for m in replies) + reasked,
        "tool_calls": sum(len(m.tool_calls) for m in replies),
        "tool_errors": sum(isinstance(m, ToolMessage) and m.status == "error" for m in messages),
        "broken_calls": reasked + sum(len(m.invalid_tool_calls) for m in replies),
        "recovered_calls": sum(int(x.get("recovered_calls", 0)) for x in meta),
        "largest_prompt": max(
            (m.usage_metadata["input_tokens"] for m in replies if m.usage_metadata), default=0
        ),
        "context_window": window if isinstance(window, int) else None,
        "stopped": stopped,
    }


def attempt_agent(model: BaseChatModel, tools: Sequence[BaseTool], system: str = "") -> Agent:
    """The executor's ReAct agent: `model` with `tools`, steered by code (:func:`steering`).

    `system`: the system prompt; empty: :func:`executor_system` for these tools.

    The tools are plain tools that read the attempt from the run's context; one agent serves
    every attempt, also concurrent ones (batch).
    """
    ask = any(t.name == ASK_USER for t in tools)
    return create_agent(
        model,
        tools=list(tools),
        system_prompt=system or executor_system(ask=ask),
        # Outermost: an ask_user call that was not offered never reaches the tool node.
        middleware=[*([] if ask else [NoQuestions()]), ToolCalls(), Steering(steering())],
        context_schema=AttemptContext,
        # An attempt is one unit: after a crash it restarts on its staging (files kept)
        # rather than resuming a half-finished conversation from a nested checkpoint.
        checkpointer=False,
    )


def _run(agent: Agent, prompt: str, context: AttemptContext) -> tuple[list[BaseMessage], str]:
    """Run one attempt's tool loop: its messages, and why code ended it ('' if the model did)."""
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    config: RunnableConfig = {"recursion_limit": 4 * context.max_tool_calls + 20}
    agent_input: Any = {"messages": messages}
    try:
        with calling("tool_loop"):
            result = agent.invoke(agent_input, config=config, context=context)
    except GraphRecursionError:
        return messages, "recursion limit"
    return without_stop(list(result["messages"]))


DRAFTS_FILE = "drafts.json"
"""An attempt's drafting record (candidates, temperatures, contract summaries), beside staging:
for people and evals; the reflector reads the state's ``drafts`` (:func:`_summary`) instead."""


def _draft(res: Resources, state: State, at: _Attempt) -> tuple[Drafts, dict[str, Any]]:
    """The attempt's drafts, and the recalled memories their prompt showed (with why).

    The best draft goes to staging with the contract's tests beside it. Candidate zero is the
    first candidate on a first attempt instead of a fresh draft, its whole-task samples the
    first witnesses. Recalled memories reach the draft prompt too: small models never see
    tier 2. A retry's candidates compete with the code the step's previous attempt staged
    (the best so far): an attempt never stages code that executes worse than what the step
    already had.
    """
    task, step, attempt, checks = state["task"], at.step, at.attempt, at.runnable
    notes, reasons = draft_notes(res.memory, at.session, res.ctx, step, task)
    first = _first(state, at)
    artifacts = res.workspace.dependency_artifacts(at.step_ref)
    deps = dependency_lines(artifacts, _dependency_module)
    earlier = _last_feedback(res.workspace, at.step_ref, attempt)
    prompt = draft_prompt(task, at.plan, step, deps, earlier, notes)
    drafts = write_drafts(
        model=at.model,
        prompt=prompt,
        temperature=temperatures(at.profile.warming, attempt.n)[0],
        checks=checks,
        task=task,
        defines=step.defines,
        prover=_prover(res, at, checks),
        witnesses=at.profile.cross_samples,
        first=first,
        drawn=_task_samples(res, state, first),
        own=[c for a in _earlier(res.workspace, at) for c in load_own(a.path)],
    )
    # The reflector runs the same own tests on the staged code (and says which it set aside).
    save_own(attempt.path, drafts.own)
    incumbent = _incumbent(res.workspace, at)
    if incumbent is not None:
        # The step's best so far competes by execution like the drafts (informed: it may have
        # seen check results, so it never testifies as an independent witness).
        drafts.offer(incumbent, origin="earlier", informed=True)
    _stage_best(at, drafts)
    _record_drafts(attempt, prompt, drafts)
    return drafts, reasons


def _stage_best(at: _Attempt, drafts: Drafts) -> None:
    """The best draft as the staged impl.py, the contract as pytest beside it (none: nothing)."""
    best = drafts.best
    if best is not None:
        atomic_write_text(at.scope.staging / IMPL_FILE, best.source)
        # The contract as pytest, without the checks every witness contradicted.
        trusted = [c for i, c in enumerate(at.runnable) if i not in drafts.suspect]
        atomic_write_text(at.scope.staging / TEST_FILE, contract_tests(trusted))


def _record_drafts(attempt: AttemptRef, prompt: str, drafts: Drafts) -> None:
    """Write :data:`DRAFTS_FILE`: the prompt, every candidate and how it did, the one kept."""
    best = drafts.best
    atomic_write_json(
        attempt.path / DRAFTS_FILE,
        {
            "prompt": prompt,
            "candidates": [
                {
                    "k": c.k,
                    "temperature": c.temperature,
                    "informed": c.informed,
                    "origin": c.origin,
                    "passed": drafts.passes(c),
                    "contract": c.report.summary() if c.report is not None else None,
                    "path": str(c.path) if c.path is not None else None,
                }
                for c in drafts.candidates
            ],
            "kept": best.k if best is not None else None,
            "why": drafts.why(),
            "yield": {origin: dataclasses.asdict(y) for origin, y in drafts.yields().items()},
            "suspect": {str(i): why for i, why in drafts.suspect.items()},
            "own_tests": [c.describe() for c in drafts.own],
            "gaming": {str(c.k): c.gaming for c in drafts.candidates if c.gaming},
            "cut": drafts.cut,
        },
    )


def _summary(drafts: Drafts, step_id: str, attempt: AttemptRef) -> DraftsSummary:
    """What the reflector needs of an attempt's drafts, as plain data for the state."""
    best = drafts.best
    return {
        "step_id": step_id,
        "attempt": attempt.n,
        "kept": best.k if best is not None else None,
        "candidates": [
            {
                "k": c.k,
                "informed": c.informed,
                "passed": drafts.passes(c),
                "folder": c.path.relative_to(attempt.path).as_posix() if c.path else None,
            }
            for c in drafts.candidates
        ],
        "cut": drafts.cut,
    }


def _candidate_zero(plain: str | None, defines: list[str]) -> str | None:
    """Candidate zero for a step: the plain answer, when it defines what the step defines."""
    if not plain or not defines:
        return None
    return plain if set(defines) <= set(defined_in_code(plain)) else None


def _earlier(workspace: Workspace, at: _Attempt) -> list[AttemptRef]:
    """The step's attempts before this one."""
    return [a for a in workspace.list_attempts(at.step_ref) if a.n < at.attempt.n]


def _incumbent(workspace: Workspace, at: _Attempt) -> str | None:
    """The impl.py the step's previous attempt staged (its best candidate), if any."""
    earlier = [a for a in workspace.list_attempts(at.step_ref) if a.n < at.attempt.n]
    if not earlier:
        return None
    impl = earlier[-1].staging / IMPL_FILE
    return impl.read_text(encoding="utf-8", errors="replace") if impl.is_file() else None


def _last_feedback(workspace: Workspace, step_ref: StepRef, attempt: AttemptRef) -> str:
    """The reflector's feedback on the step's latest earlier attempt ('' on the first)."""
    earlier = [a for a in workspace.list_attempts(step_ref) if a.n < attempt.n]
    for previous in reversed(earlier):
        if previous.verdict_json.exists():
            return str(workspace.read_verdict(previous).get("feedback") or "")
    return ""


def _question(messages: list[BaseMessage]) -> str | None:
    """The question of the attempt's last ask_user call, if that is how it ended."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                if call["name"] == ASK_USER:
                    return str(call["args"].get("question", "")).strip() or None
            return None
    return None
