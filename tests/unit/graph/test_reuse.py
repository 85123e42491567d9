"""What a process builds once and reuses: the executor's agent, the graph, memory, the Context."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from atom_agent import Context, build_graph, run_task
from atom_agent.errors import ToolConfigError
from atom_agent.models.profiles import profile_for
from atom_agent.nodes.common import attempt_scope, context_of
from atom_agent.nodes.executor import node as executor_node
from atom_agent.nodes.executor.attempt import AttemptContext
from atom_agent.nodes.executor.node import attempt_agent
from atom_agent.nodes.executor.tools import executor_tools
from atom_agent.services import Services, close_all, services_for, shared_memory
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel, tool_call

from .scripts import ADD_TEST, ExecutorScript, models, passing_attempt, step


def _attempt(svc: Services, step_id: str) -> tuple[Any, SessionContext]:
    """A fresh attempt of a step in run r1 of the Services' workspace."""
    ws = svc.workspace
    run = ws.run("r1") if (ws.runs_dir / "r1").exists() else ws.create_run("r1", task="t")
    step_ref = ws.create_step(run, step_id)
    attempt = ws.new_attempt(step_ref)
    session = SessionContext(
        session_id="r1", project_id="default", run_id="r1", step_id=step_id, attempt=attempt.n
    )
    return attempt_scope(ws, step_ref, attempt), session


def test_concurrent_attempts_share_one_agent_and_keep_their_files_apart(ctx: Context) -> None:
    def respond(messages: list[BaseMessage]) -> Any:
        step_id = str(next(m for m in messages if isinstance(m, HumanMessage)).content)
        impl = f"def add(a, b):\n    return a + b  # {step_id}\n"
        script = [*passing_attempt(impl=impl, test=ADD_TEST), "should not be reached"]
        return script[sum(isinstance(m, ToolMessage) for m in messages)]

    # Latency interleaves the two attempts' model calls on the one compiled agent.
    model = ScriptedChatModel(respond=respond, latency_s=0.05)
    svc = services_for(ctx, model)
    attempts = {step_id: _attempt(svc, step_id) for step_id in ("left", "right")}
    profile = profile_for(model)
    agent = attempt_agent(model, profile, executor_tools(ctx.executor_tools, profile))

    def run_one(step_id: str) -> list[BaseMessage]:
        scope, session = attempts[step_id]
        context = AttemptContext(
            session=session,
            scope=scope,
            runner=svc.runner,
            limits=svc.limits,
            memory=svc.memory,
            max_tool_calls=10,
        )
        out = agent.invoke({"messages": [HumanMessage(step_id)]}, context=context)
        return list(out["messages"])

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(attempts, pool.map(run_one, attempts), strict=True))
    for step_id, (scope, _) in attempts.items():
        assert sorted(p.name for p in scope.staging.iterdir() if p.suffix == ".py") == [
            "impl.py", "test.py",
        ]  # fmt: skip
        assert f"# {step_id}\n" in (scope.staging / "impl.py").read_text()
        # Each attempt stopped on its own passing tests, judged on its own files.
        tools = [m.name for m in results[step_id] if isinstance(m, ToolMessage)]
        assert tools == ["write_file", "write_file", "run_tests"]
        assert isinstance(results[step_id][-1], ToolMessage)  # no model call after the pass


def test_the_executor_compiles_its_agent_once_for_every_attempt(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[Any] = []

    def counted(*args: Any) -> Any:
        compiled.append(args)
        return attempt_agent(*args)

    monkeypatch.setattr(executor_node, "attempt_agent", counted)
    plan = Plan(steps=[step("one"), step("two", depends_on=["one"])])
    script = {
        ("one", 1): [tool_call("list_files", {}), "I am done"],  # fails: no files
        ("one", 2): passing_attempt(),
        ("two", 1): passing_attempt(),
    }
    outcome = run_task("t", ctx, models=models([plan], ExecutorScript(script)))
    assert outcome.ok
    assert len(compiled) == 1  # three attempts of two steps, one agent


def test_the_graph_is_compiled_once_per_models_and_each_caller_gets_its_own_persistence() -> None:
    roles = models([Plan(steps=[step("one")])], ExecutorScript({}))
    first, second = InMemorySaver(), InMemorySaver()
    a = build_graph(models=roles, checkpointer=first)
    b = build_graph(models=roles, checkpointer=second)
    assert a is not b and a.nodes["executor"] is b.nodes["executor"]  # compiled once
    assert (a.checkpointer, b.checkpointer) == (first, second)
    assert build_graph(models=roles).checkpointer is None
    other = build_graph(models=models([Plan(steps=[step("one")])], ExecutorScript({})))
    assert other.nodes["executor"] is not a.nodes["executor"]  # other models: compiled anew


def test_runs_of_one_process_share_the_memory_store_until_it_closes(ctx: Context) -> None:
    plan = Plan(steps=[step("one")])
    script = {("one", 1): passing_attempt()}
    assert run_task("t", ctx, models=models([plan], ExecutorScript(script))).ok
    memory = shared_memory(ctx)
    assert run_task("t", ctx, models=models([plan], ExecutorScript(script))).ok
    assert shared_memory(ctx) is memory  # the second run used the store the first opened
    # Another project (and other models) in the same workspace: the same store.
    assert shared_memory(ctx.replace(project_id="other")) is memory
    outcome = run_task("t", ctx, models=models([plan], ExecutorScript(script)), close_services=True)
    assert outcome.ok
    assert shared_memory(ctx) is not memory  # closed after that run; opened anew
    close_all()


def test_services_build_each_shared_thing_once(ctx: Context) -> None:
    svc = services_for(ctx, ScriptedChatModel(responses=[]))
    built: list[int] = []
    first = svc.memo("thing", lambda: built.append(1) or object())
    assert svc.memo("thing", lambda: built.append(2) or object()) is first
    assert built == [1]


class _Runtime:
    def __init__(self, context: Any) -> None:
        self.context = context


def test_the_context_is_used_as_given_and_only_a_missing_one_reads_the_environment(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolved(given: Any) -> Context:
        return context_of(_Runtime(given))  # type: ignore[arg-type]

    given = Context(workspace=ctx.workspace)  # max_attempts left at its default
    monkeypatch.setenv("ATOM_MAX_ATTEMPTS", "5")
    # The entry point resolved the environment already: nodes never merge it in again.
    assert resolved(given) is given and resolved(given).max_attempts == 3
    assert resolved({"max_attempts": 3, "workspace": ctx.workspace}).max_attempts == 3
    assert resolved(None).max_attempts == 5  # no context at all: the environment
    monkeypatch.setenv("ATOM_MAX_ATTEMPTS", "7")
    assert resolved(None).max_attempts == 7


def test_an_attempt_agent_run_without_its_context_is_a_wiring_error(ctx: Context) -> None:
    model = ScriptedChatModel(responses=[tool_call("list_files", {}), "ok"])
    svc = services_for(ctx, model)
    scope, session = _attempt(svc, "one")
    profile = profile_for(model)
    agent = attempt_agent(model, profile, executor_tools(ctx.executor_tools, profile))
    with pytest.raises(ToolConfigError, match="context=ToolContext"):
        agent.invoke({"messages": [HumanMessage("go")]})
