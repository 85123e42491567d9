"""The executor node: one attempt of one step, drafts first or a ReAct loop on tiered context."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphRecursionError
from langgraph.graph.state import CompiledStateGraph

from atom_agent import prompts
from atom_agent.checks.contract import check_problems, contract_tests
from atom_agent.checks.examples import ExamplesReport, run_examples, task_examples
from atom_agent.checks.names import defined_in_code
from atom_agent.drafting import Drafts, dependency_lines, draft_prompt, temperatures, write_drafts
from atom_agent.models.profiles import ModelProfile, profile_for
from atom_agent.resources import Resources
from atom_agent.state import IMPL_FILE, TEST_FILE, Check, DraftsSummary, State
from atom_agent.telemetry import emit
from atom_agent.tools.calls import ToolCalls
from atom_agent.tools.scope import ToolScope
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
    step_session,
    unfinished_attempt,
)
from .attempt import ASK_USER, AttemptContext
from .prompt import draft_notes, reconstruct_context
from .steering import steering
from .steering.chain import chained
from .steering.stop import without_stop
from .tools import executor_tools

logger = logging.getLogger(__name__)


def _examples_check(
    res: Resources, scope: ToolScope, examples: list[tuple[str, str]]
) -> Callable[[], ExamplesReport] | None:
    """Runs `examples` against the attempt's staged impl.py (None without examples)."""
    if not examples:
        return None

    def check() -> ExamplesReport:
        if not (scope.staging / IMPL_FILE).is_file():
            return ExamplesReport()
        return run_examples(
            examples,
            staging=scope.staging,
            runner=res.runner,
            limits=res.limits,
            python_path=scope.python_path(),
        )

    return check


def make_executor(res: Resources) -> Any:
    """The executor node, closed over the run's resources.

    The node's ReAct agent is compiled on its first tool loop and kept here, in the node's
    closure (one per model and tool set): an attempt only differs in what it passes as
    ``context=`` (:class:`AttemptContext`: its scope, session, sandbox and budget).
    """
    agents: dict[tuple[str, tuple[str, ...]], tuple[BaseChatModel, Agent]] = {}

    def agent_for(model: BaseChatModel, profile: ModelProfile, tools: list[BaseTool]) -> Agent:
        key = (profile.name, tuple(t.name for t in tools))
        known = agents.get(key)
        if known is None or known[0] is not model:
            known = agents[key] = (model, attempt_agent(model, profile, tools))
        return known[1]

    def executor(state: State) -> dict[str, Any]:
        ctx = res.ctx
        plan = plan_of(state)
        step_id = state.get("current_step")
        step = next((s for s in plan.steps if s.id == step_id), None)
        if step is None:
            raise RuntimeError(f"executor: current step {step_id!r} is not in the plan")
        step_ref = res.workspace.step(run_ref(res, state), step.id)
        attempt = unfinished_attempt(res.workspace, step_ref) or res.workspace.new_attempt(step_ref)
        session = step_session(state, ctx, step.id, attempt.n)
        scope = attempt_scope(res.workspace, step_ref, attempt)
        model = res.model("executor")
        profile = profile_for(model, ctx.model_profile)
        tools = executor_tools(ctx.executor_tools, profile)  # a bad setting fails here
        available = available_names(res.workspace.dependency_artifacts(step_ref))
        runnable = [
            c
            for c in step.checks
            if not check_problems(c, defines=step.defines, available=available)
        ]
        # A draft is only worth more than a tool loop when a contract can prove it.
        # Recalled memories reach the draft prompt too (small models never see tier 2).
        notes, note_reasons = (
            draft_notes(res.memory, session, ctx, step, state["task"])
            if profile.draft_first and runnable
            else ([], {})
        )
        first = _candidate_zero(state.get("plain"), step.defines) if attempt.n == 1 else None
        drafts = (
            _draft(
                res,
                state["task"],
                plan,
                step,
                step_ref,
                attempt,
                scope,
                model,
                runnable,
                notes,
                first,
            )  # fmt: skip
            if profile.draft_first and runnable
            else None
        )
        best = drafts.best if drafts is not None else None
        passed = drafts is not None and best is not None and drafts.passes(best)
        # The reflector's witnesses and voters travel in the state (checkpointed with it).
        summary = _summary(drafts, step.id, attempt) if drafts is not None else None
        if drafts is not None and (passed or not profile.tool_loop):
            # The draft passed its contract (or this model does worse in a tool loop): the
            # attempt is the draft, and the reflector proves it.
            messages = drafts.spent
            res.workspace.write_history(attempt, messages)
            emit(
                "executor.done",
                run_id=state["run_id"],
                step_id=step.id,
                attempt=attempt.n,
                tool_calls=0,
                question=None,
                stopped="draft passed" if passed else "drafts only",
            )
            return {
                "attempts": {step.id: attempt.n},
                "drafts": summary,
                "usage": usage_of(messages, model_name_of(model)),
                "question": None,
                "used_memories": list(note_reasons),
                "used_memory_reasons": note_reasons,
            }
        prompt = reconstruct_context(
            ctx=ctx,
            task=state["task"],
            plan=plan,
            step=step,
            statuses=dict(state.get("step_status") or {}),
            workspace=res.workspace,
            step_ref=step_ref,
            attempt=attempt,
            files_text=scope.describe(),
            memory=res.memory,
            session=session,
            answers=list(state.get("answers") or []),
        )
        emit(
            "executor.attempt",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            prompt_tokens=prompt.tokens,
            memories=len(prompt.memory_ids),
            unrelated_memories=len(prompt.unrelated),
        )
        agent = agent_for(model, profile, tools)
        context = AttemptContext(
            session=session,
            scope=scope,
            runner=res.runner,
            limits=res.limits,
            memory=res.memory,
            max_tool_calls=ctx.max_tool_calls,
            check_examples=_examples_check(
                res, scope, task_examples(state["task"], step.description)
            ),
        )
        messages, stopped = _run(agent, prompt.text, context)
        if drafts is not None:
            messages = [*drafts.spent, *messages]
        res.workspace.write_history(attempt, messages)
        question = _question(messages)
        if question:
            # The attempt ends with a question, not a verdict; tier 1 shows it to the next one.
            res.workspace.write_verdict(
                attempt,
                {"outcome": "asked the user", "decision": "ask_user", "feedback": question},
            )
        emit(
            "executor.done",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            tool_calls=sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage)),
            question=question,
            stopped=stopped,
        )
        return {
            "attempts": {step.id: attempt.n},
            "drafts": summary,
            "usage": usage_of(messages, model_name_of(model)),
            "question": question,
            # Only what reached a prompt: the gate's rejects are neither reinforced nor blamed.
            "used_memories": list(dict.fromkeys([*note_reasons, *prompt.memory_ids])),
            "used_memory_reasons": {**prompt.memory_reasons, **note_reasons},
        }

    return executor


Agent = CompiledStateGraph[Any, Any, Any, Any]


def attempt_agent(model: BaseChatModel, profile: ModelProfile, tools: Sequence[BaseTool]) -> Agent:
    """The executor's ReAct agent: `model` with `tools`, steered as `profile` needs.

    The tools are plain tools that read the attempt from the run's context; one agent serves
    every attempt, also concurrent ones (batch).
    """
    return create_agent(
        model,
        tools=list(tools),
        system_prompt=prompts.EXECUTOR_SYSTEM,
        middleware=[ToolCalls(), *chained(steering(profile))],
        context_schema=AttemptContext,
        # An attempt is one unit: after a crash it restarts on its staging (files kept)
        # rather than resuming a half-finished conversation from a nested checkpoint.
        checkpointer=False,
    )


def _run(
    agent: CompiledStateGraph[Any, Any, Any, Any], prompt: str, context: AttemptContext
) -> tuple[list[BaseMessage], str]:
    """Run one attempt's tool loop: its messages, and why code ended it ('' if the model did)."""
    messages: list[BaseMessage] = [HumanMessage(prompt)]
    config: RunnableConfig = {"recursion_limit": 4 * context.max_tool_calls + 20}
    agent_input: Any = {"messages": messages}
    try:
        result = agent.invoke(agent_input, config=config, context=context)
    except GraphRecursionError:
        return messages, "recursion limit"
    return without_stop(list(result["messages"]))


DRAFTS_FILE = "drafts.json"
"""An attempt's drafting record (candidates, temperatures, contract summaries), beside staging:
for people and evals; the reflector reads the state's ``drafts`` (:func:`_summary`) instead."""


def _draft(
    res: Resources,
    task: str,
    plan: Any,
    step: Any,
    step_ref: StepRef,
    attempt: AttemptRef,
    scope: AttemptScope,
    model: BaseChatModel,
    checks: list[Check],
    notes: list[str],
    first: str | None = None,
) -> Drafts:
    """The attempt's drafts; the best goes to staging with the contract's tests beside it.

    `first` (candidate zero) is the first candidate instead of a fresh draft. A retry's
    candidates compete with the code the step's previous attempt staged (the best so far):
    an attempt never stages code that executes worse than what the step already had.
    """
    artifacts = res.workspace.dependency_artifacts(step_ref)
    deps = dependency_lines(artifacts, lambda d: f"deps.{python_ident(d)}.impl")
    earlier = _last_feedback(res.workspace, step_ref, attempt)
    prompt = draft_prompt(task, plan, step, deps, earlier, notes)
    available = available_names(artifacts)
    profile = profile_for(model, res.ctx.model_profile)
    drafts = write_drafts(
        model=model,
        prompt=prompt,
        temps=temperatures(profile.warming, attempt.n),
        checks=checks,
        task=task,
        defines=step.defines,
        available=available,
        folder=attempt.path / "candidates",
        python_path=scope.python_path()[1:],
        runner=res.runner,
        limits=res.limits,
        witnesses=profile.cross_samples,
        first=first,
    )
    incumbent = _incumbent(res.workspace, step_ref, attempt)
    if incumbent is not None:
        drafts.consider(incumbent, folder=attempt.path / "candidates", checks=checks,
                        defines=step.defines, available=available,
                        python_path=scope.python_path()[1:], runner=res.runner,
                        limits=res.limits)  # fmt: skip
    best = drafts.best
    if best is not None:
        atomic_write_text(scope.staging / IMPL_FILE, best.source)
        # The contract as pytest, without the checks every witness contradicted.
        trusted = [c for i, c in enumerate(checks) if i not in drafts.suspect]
        atomic_write_text(scope.staging / TEST_FILE, contract_tests(trusted))
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
            "suspect": {str(i): why for i, why in drafts.suspect.items()},
        },
    )
    return drafts


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
    }


def _candidate_zero(plain: str | None, defines: list[str]) -> str | None:
    """Candidate zero for a step: the plain answer, when it defines what the step defines."""
    if not plain or not defines:
        return None
    return plain if set(defines) <= set(defined_in_code(plain)) else None


def _incumbent(workspace: Workspace, step_ref: StepRef, attempt: AttemptRef) -> str | None:
    """The impl.py the step's previous attempt staged (its best candidate), if any."""
    earlier = [a for a in workspace.list_attempts(step_ref) if a.n < attempt.n]
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
