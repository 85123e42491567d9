"""What a run's Resources build once and share: the executor's agent, models, memory."""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from atom_agent import Context, build_graph, run_task
from atom_agent.errors import ConfigError, ToolConfigError
from atom_agent.nodes.common import attempt_scope
from atom_agent.nodes.executor import node as executor_node
from atom_agent.nodes.executor.attempt import AttemptContext
from atom_agent.nodes.executor.node import attempt_agent
from atom_agent.nodes.executor.steering.stop import without_stop
from atom_agent.nodes.executor.tools import executor_tools
from atom_agent.resources import Resources
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel, tool_call

from .scripts import ADD_TEST, ExecutorScript, models, passing_attempt, step


def _attempt(svc: Resources, step_id: str) -> tuple[Any, SessionContext]:
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
    svc = Resources(ctx, models=model)
    attempts = {step_id: _attempt(svc, step_id) for step_id in ("left", "right")}
    agent = attempt_agent(model, executor_tools(ctx.executor_tools))

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
        messages, why = without_stop(list(out["messages"]))
        assert why == "tests passed"
        return messages

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
        assert isinstance(results[step_id][-1], ToolMessage)  # no model reply after the pass


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
    assert outcome.status == "done"
    assert len(compiled) == 1  # three attempts of two steps, one agent


def test_each_build_compiles_its_own_graph_over_the_resources_it_is_given(ctx: Context) -> None:
    roles = models([Plan(steps=[step("one")])], ExecutorScript({}))
    first, second = InMemorySaver(), InMemorySaver()
    with Resources(ctx, models=roles) as res:
        a = build_graph(res, checkpointer=first)
        b = build_graph(res, checkpointer=second)
        assert a is not b and a.nodes["executor"] is not b.nodes["executor"]  # nothing cached
        assert (a.checkpointer, b.checkpointer) == (first, second)
        assert build_graph(res).checkpointer is None


def test_runs_on_one_resources_share_its_store_and_a_run_without_closes_its_own(
    ctx: Context,
) -> None:
    plan = Plan(steps=[step("one")])
    script = {("one", 1): passing_attempt()}
    with Resources(ctx, models=models([plan], ExecutorScript(script))) as res:
        memory = res.memory
        assert run_task("t", resources=res).status == "done"
        assert not memory.closed
        assert res.for_context(ctx.replace(project_id="x")).memory is memory
    assert memory.closed  # closed with its owner
    with pytest.raises(ConfigError, match="closed"):
        _ = res.memory
    # A run given models only builds its own Resources and closes them at its end.
    assert run_task("t", ctx, models=models([plan], ExecutorScript(script))).status == "done"


def test_resources_build_each_shared_thing_once(ctx: Context) -> None:
    svc = Resources(ctx, models=ScriptedChatModel(responses=[]))
    built: list[int] = []
    first = svc.memo("thing", lambda: built.append(1) or object())
    assert svc.memo("thing", lambda: built.append(2) or object()) is first
    assert built == [1]


def test_derived_resources_share_loaded_models_and_store_but_not_their_settings(
    ctx: Context,
) -> None:
    local = ctx.replace(model="local")
    with Resources(local) as res:
        other = res.for_context(local.replace(project_id="p2", max_attempts=5))
        assert other.ctx.max_attempts == 5 and res.ctx.max_attempts == local.max_attempts
        # The local model's weights load on first use only: building it costs nothing here.
        assert other.model("planner") is res.model("executor")
        assert other.memory is res.memory
        elsewhere = res.for_context(local.replace(workspace=ctx.workspace + "-2"))
        assert elsewhere.memory is not res.memory  # another store, opened and closed by res


def test_a_graph_invoked_with_another_context_refuses_to_run(ctx: Context) -> None:
    roles = models([Plan(steps=[step("one")])], ExecutorScript({}))
    with Resources(ctx, models=roles) as res:
        graph = build_graph(res)
        with pytest.raises(ConfigError, match=r"\['max_attempts'\]"):
            graph.invoke({"task": "t"}, context=ctx.replace(max_attempts=ctx.max_attempts + 1))
        with pytest.raises(ConfigError, match="max_attempts"):
            graph.invoke({"task": "t"}, context={"max_attempts": ctx.max_attempts + 1})


@pytest.mark.parametrize("on_project", [False, True])
def test_only_the_start_node_reads_the_invoke_time_context(
    ctx: Context, tmp_path: Path, on_project: bool
) -> None:
    # The nodes read their settings from res.ctx, the one channel; start reads the Runtime
    # only to refuse a foreign context= (the test above).
    built = ctx.replace(repo=str(tmp_path)) if on_project else ctx
    graph = build_graph(Resources(built, models=ScriptedChatModel(responses=[])))
    takes_runtime = {
        name
        for name, spec in graph.builder.nodes.items()
        if "runtime" in inspect.signature(spec.runnable.func).parameters  # type: ignore[attr-defined]
    }
    assert takes_runtime == {"start"}


def test_an_attempt_agent_run_without_its_context_is_a_wiring_error(ctx: Context) -> None:
    model = ScriptedChatModel(responses=[tool_call("list_files", {}), "ok"])
    svc = Resources(ctx, models=model)
    scope, session = _attempt(svc, "one")
    agent = attempt_agent(model, executor_tools(ctx.executor_tools))
    with pytest.raises(ToolConfigError, match="context=ToolContext"):
        agent.invoke({"messages": [HumanMessage("go")]})


def test_runs_on_one_resources_compile_one_graph_over_one_checkpointer(
    ctx: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    from atom_agent import run as run_module

    compiled: list[object] = []
    real = run_module.build_graph
    monkeypatch.setattr(
        run_module, "build_graph", lambda *a, **k: compiled.append(1) or real(*a, **k)
    )
    plan = Plan(steps=[step("one")])
    script = {("one", 1): passing_attempt()}
    roles = models([plan, plan, plan], ExecutorScript(script))
    with Resources(ctx, models=roles) as res:
        outcomes = [run_task("t", resources=res) for _ in range(3)]
        assert [o.status for o in outcomes] == ["done"] * 3 and len(compiled) == 1
        saver = res.checkpointer
        assert all(saver.get_tuple({"configurable": {"thread_id": o.run_id}}) for o in outcomes)
        assert run_module.resume_run(outcomes[0].run_id, resources=res).status == "done"
        assert len(compiled) == 1  # resuming on the same Resources reuses it too
    with pytest.raises(Exception, match="closed"):  # closed with its Resources
        saver.conn.execute("select 1")
