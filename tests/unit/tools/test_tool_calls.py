"""Every tool call, in an agent or through run_tool: each tool kind, one result shape, events."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from tests.unit.tools.running import run_tool

from atom_agent.errors import ConfigError, ToolConfigError
from atom_agent.memory import MemoryManager
from atom_agent.memory.records import MAX_CONTENT_CHARS, MAX_RECALL_LIMIT, MEMORY_TYPES
from atom_agent.nodes.executor.tools import EXECUTOR_TOOLS
from atom_agent.sandbox import Limits, SubprocessRunner
from atom_agent.session import SessionContext
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.tools.calls import TRUSTED_TOOLS, ToolCalls, ToolResult
from atom_agent.tools.code import CODE_TOOLS
from atom_agent.tools.context import ToolContext
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.memory import MEMORY_TOOLS
from atom_agent.tools.scope import ToolScope
from atom_agent.tools.search import SEARCH_TOOLS

Tools = Sequence[BaseTool]
ALL_TOOLS: Tools = [*FILE_TOOLS, *CODE_TOOLS, *SEARCH_TOOLS[:1], *MEMORY_TOOLS]

Events = Callable[[], list[tuple[str, dict[str, Any]]]]


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager.open(tmp_path / "ws") as memory:
        yield memory


@pytest.fixture
def context(scope: ToolScope, session: SessionContext, manager: MemoryManager) -> ToolContext:
    limits = Limits(timeout_s=20.0, cpu_s=10, memory_mb=512)
    return ToolContext(
        session=session, scope=scope, runner=SubprocessRunner(), limits=limits, memory=manager
    )


def run(
    context: ToolContext,
    session: SessionContext | None,
    name: Any,
    args: Any = None,
    call_id: str = "c1",
) -> tuple[ToolResult, dict[str, Any]]:
    """One call of the run `context` with `session`, outside an agent."""
    call = {"name": name, "args": args, "id": call_id}
    result = run_tool(ALL_TOOLS, call, replace(context, session=session))
    return result, json.loads(result.content)


def assert_event_pair(
    events: Events,
    name: str,
    call_id: str,
    route: str,
    status: str,
    session_id: str | None = "sess-1",
) -> None:
    recorded = [(e, f) for e, f in events() if e.startswith("tool_")]
    assert [e for e, _ in recorded] == ["tool_call", "tool_result"]
    (_, start), (_, end) = recorded
    assert (start["tool_name"], start["tool_call_id"]) == (name, call_id)
    assert (end["tool_name"], end["tool_call_id"], end["route"], end["status"]) == (
        name,
        call_id,
        route,
        status,
    )
    assert start["session_id"] == end["session_id"] == session_id
    assert end["duration_ms"] >= 0


@pytest.mark.parametrize(
    ("name", "args", "check"),
    [
        ("write_file", {"path": "impl.py", "content": "print(6 * 7)\n"}, "written"),
        ("list_files", {}, "files"),
        ("search_files", {"pattern": "base"}, "matches"),
    ],
)
def test_sandboxed_tools_are_routed_with_events(
    context: ToolContext,
    session: SessionContext,
    events: Events,
    name: str,
    args: dict[str, Any],
    check: str,
) -> None:
    result, content = run(context, session, name, args)
    assert (result.status, result.route, result.tool_name, result.tool_call_id) == (
        "ok",
        "sandboxed",
        name,
        "c1",
    )
    assert check in content
    assert_event_pair(events, name, "c1", "sandboxed", "ok")


def test_code_tools_run_through_the_sandbox(
    context: ToolContext, session: SessionContext, events: Events, area: dict[str, Path]
) -> None:
    (area["staging"] / "impl.py").write_text("import os\nprint(os.environ.get('HOME'))\n")
    result, content = run(context, session, "run_python", {"path": "impl.py"}, "c7")
    assert result.status == "ok" and result.route == "sandboxed"
    assert content["ok"] is True and content["exit_code"] == 0
    assert str(Path.home()) != content["output"].strip()  # scrubbed env: a private HOME
    assert_event_pair(events, "run_python", "c7", "sandboxed", "ok")


def test_memory_tools_are_routed_in_process(
    context: ToolContext, session: SessionContext, events: Events, manager: MemoryManager
) -> None:
    result, content = run(
        context, session, "remember", {"content": "Tests use pytest", "type": "convention"}, "m1"
    )
    assert (result.status, result.route) == ("ok", "trusted")
    assert content["remembered"] is True
    memory_id = content["memory_id"]
    assert_event_pair(events, "remember", "m1", "trusted", "ok")
    # The memory operation's own event happens inside the routed call.
    assert [e for e, _ in events()] == ["tool_call", "memory.remember", "tool_result"]
    # The memory landed in the session's project, with the session's provenance.
    stored = manager.recall(session, "pytest")
    assert [r.id for r in stored] == [memory_id] and stored[0].run_id == "r1"
    result, content = run(context, session, "recall", {"query": "which test framework"}, "m2")
    assert result.route == "trusted" and content["memories"][0]["id"] == memory_id
    result, content = run(
        context, session, "forget", {"memory_id": memory_id, "reason": "outdated"}, "m3"
    )
    assert result.route == "trusted" and content["forgotten"] is True
    result, content = run(context, session, "forget", {"memory_id": "does-not-exist"}, "m4")
    assert result.status == "error" and result.route == "trusted" and "error" in content
    other = SessionContext(session_id="s2", project_id="elsewhere")
    _, content = run(context, other, "recall", {"query": "pytest"}, "m5")
    assert content["count"] == 0  # another project sees nothing


def test_unknown_tools_are_rejected_with_the_list(
    context: ToolContext, session: SessionContext, events: Events
) -> None:
    result, content = run(context, session, "rm_rf", {"path": "/"}, "u1")
    assert (result.status, result.route) == ("error", "rejected")
    assert "unknown tool 'rm_rf'" in content["error"]
    for name in ("read_file", "run_tests", "search_files", "remember", "recall", "forget"):
        assert name in content["error"]
    assert_event_pair(events, "rm_rf", "u1", "rejected", "error")


def test_missing_session_is_an_error_result(context: ToolContext, events: Events) -> None:
    for name in ("write_file", "remember"):
        result, content = run(context, None, name, {"path": "x.py", "content": "x"}, "n1")
        assert (result.status, result.route) == ("error", "rejected")
        assert "no session context" in content["error"]
    recorded = events()
    assert [e for e, _ in recorded] == ["tool_call", "tool_result"] * 2
    assert all(fields["session_id"] is None for _, fields in recorded)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"name": "read_file", "args": "{not json", "id": "x"}, "not valid JSON"),
        ({"name": "read_file", "args": ["impl.py"], "id": "x"}, "expected a JSON object"),
        ({"args": {"path": "impl.py"}, "id": "x"}, "no tool name"),
        ({"name": 42, "args": {}, "id": "x"}, "no tool name"),
        ({"name": "write_file", "args": {"path": "impl.py"}, "id": "x"}, "content"),
        ({"name": "recall", "args": {"limit": 500}, "id": "x"}, "limit"),
    ],
)
def test_malformed_calls_are_error_results(
    context: ToolContext,
    session: SessionContext,
    events: Events,
    call: dict[str, Any],
    message: str,
) -> None:
    result = run_tool(ALL_TOOLS, call, context)
    assert result.status == "error" and message in json.loads(result.content)["error"]
    assert [e for e, _ in events() if e.startswith("tool_")] == ["tool_call", "tool_result"]


def test_arguments_as_json_text_are_accepted(
    context: ToolContext, session: SessionContext, area: dict[str, Path]
) -> None:
    result = run_tool(
        ALL_TOOLS,
        {
            "name": "write_file",
            "id": "j1",
            "args": json.dumps({"path": "a.py", "content": "A = 1\n"}),
        },
        context,
    )
    assert result.status == "ok" and (area["staging"] / "a.py").read_text() == "A = 1\n"


def test_result_shape_and_message(context: ToolContext, session: SessionContext) -> None:
    result, _ = run(context, session, "read_file", {"path": "missing.py"}, "r9")
    assert {f.name for f in fields(result)} == {
        "status",
        "content",
        "tool_name",
        "tool_call_id",
        "duration_ms",
        "route",
    }
    message = result.to_message()
    assert isinstance(message, ToolMessage)
    assert (message.status, message.tool_call_id, message.name) == ("error", "r9", "read_file")
    assert "does not exist" in json.loads(str(message.content))["error"]


def test_plain_tools_without_error_handlers_still_give_error_results(
    context: ToolContext,
) -> None:
    def shout(text: str) -> str:
        """Shout."""
        from langchain_core.tools import ToolException

        if not text:
            raise ToolException("nothing to shout")
        return text.upper()

    plain = [StructuredTool.from_function(shout)]
    ok = run_tool(plain, {"name": "shout", "args": {"text": "hi"}, "id": "1"}, context)
    assert ok.status == "ok" and json.loads(ok.content) == {"result": "HI"}
    bad = run_tool(plain, {"name": "shout", "args": {"text": ""}, "id": "2"}, context)
    assert bad.status == "error" and json.loads(bad.content) == {"error": "nothing to shout"}
    invalid = run_tool(plain, {"name": "shout", "args": {}, "id": "3"}, context)
    assert invalid.status == "error" and "text" in json.loads(invalid.content)["error"]
    # Memory tools not given: their names are unknown, not crashes.
    assert run_tool(plain, {"name": "recall", "args": {}, "id": "4"}, context).route == "rejected"


def test_wiring_and_configuration_errors_raise(scope: ToolScope, session: SessionContext) -> None:
    list_files = {"name": "list_files", "args": {}, "id": "1"}
    with pytest.raises(ToolConfigError, match="no scope"):
        run_tool(ALL_TOOLS, list_files, ToolContext(session=session))
    run_python = {"name": "run_python", "args": {"path": "impl.py"}, "id": "2"}
    with pytest.raises(ToolConfigError, match="no runner"):
        run_tool(ALL_TOOLS, run_python, ToolContext(session=session, scope=scope))
    recall = {"name": "recall", "args": {}, "id": "3"}
    with pytest.raises(ToolConfigError, match="MemoryManager"):
        run_tool(ALL_TOOLS, recall, ToolContext(session=session, scope=scope))

    def configured() -> str:
        """A tool whose configuration is broken (e.g. a missing API key)."""
        raise ConfigError("set EXAMPLE_API_KEY")

    broken = [StructuredTool.from_function(configured)]
    with pytest.raises(ConfigError, match="EXAMPLE_API_KEY"):
        run_tool(
            broken, {"name": "configured", "args": {}, "id": "4"}, ToolContext(session=session)
        )
    assert TRUSTED_TOOLS == {"remember", "recall", "forget"}


def agent_with(model: ScriptedChatModel, tools: Tools = ALL_TOOLS) -> Any:
    """An agent with the plain tools and the one tool-call middleware (context: ToolContext)."""
    return create_agent(
        model, tools=list(tools), middleware=[ToolCalls()], context_schema=ToolContext
    )


def test_create_agent_reports_every_call_and_answers_every_one(
    context: ToolContext, session: SessionContext, area: dict[str, Path]
) -> None:
    model = ScriptedChatModel(
        responses=[
            tool_call(
                "write_file", {"path": "impl.py", "content": "print(sum(range(10)))\n"}, id="a1"
            ),
            tool_call("run_python", {"path": "impl.py"}, id="a2"),
            tool_call("remember", {"content": "sum(range(10)) is 45", "type": "fact"}, id="a3"),
            tool_call("delete_everything", {}, id="a4"),
            "done",
        ]
    )
    agent = agent_with(model)
    custom: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    for mode, chunk in agent.stream(
        {"messages": [("user", "compute it")]}, stream_mode=["custom", "values"], context=context
    ):
        if mode == "custom":
            custom.append(chunk)
        else:
            final = chunk
    tool_messages = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status) for m in tool_messages] == [
        ("a1", "success"),
        ("a2", "success"),
        ("a3", "success"),
        ("a4", "error"),
    ]
    assert json.loads(str(tool_messages[1].content))["output"] == "45\n"
    assert "unknown tool" in str(tool_messages[3].content)
    assert (area["staging"] / "impl.py").exists()
    # Both paths emitted their events into LangGraph's custom stream, in call order.
    pairs = [
        (e["event"], e["tool_call_id"], e["route"])
        for e in custom
        if e["event"] in ("tool_call", "tool_result")
    ]
    assert pairs == [
        ("tool_call", "a1", "sandboxed"),
        ("tool_result", "a1", "sandboxed"),
        ("tool_call", "a2", "sandboxed"),
        ("tool_result", "a2", "sandboxed"),
        ("tool_call", "a3", "trusted"),
        ("tool_result", "a3", "trusted"),
        ("tool_call", "a4", "rejected"),
        ("tool_result", "a4", "rejected"),
    ]
    # The model was offered the sandboxed and the trusted tools.
    offered = set(model.calls[0].tool_names)
    assert {
        "read_file",
        "write_file",
        "run_python",
        "run_tests",
        "search_files",
        "remember",
        "recall",
        "forget",
    } <= offered


async def test_async_agent_path(context: ToolContext) -> None:
    model = ScriptedChatModel(responses=[tool_call("list_files", {}, id="b1"), "ok"])
    state = await agent_with(model).ainvoke({"messages": [("user", "look")]}, context=context)
    message = [m for m in state["messages"] if isinstance(m, ToolMessage)][0]
    assert message.status == "success" and "files" in json.loads(str(message.content))


def _attempt_area(root: Path, name: str) -> ToolContext:
    staging = root / name / "staging"
    staging.mkdir(parents=True)
    session = SessionContext(
        session_id="r1", project_id="proj", run_id="r1", step_id=name, attempt=1
    )
    return ToolContext(session=session, scope=ToolScope(staging=staging))


def test_one_shared_agent_keeps_concurrent_runs_in_their_own_staging(tmp_path: Path) -> None:
    contexts = {name: _attempt_area(tmp_path, name) for name in ("left", "right")}

    def respond(messages: list[Any]) -> Any:
        marker = str(messages[0].content)  # each run's prompt names its own marker
        if sum(isinstance(m, ToolMessage) for m in messages) >= 2:
            return "done"
        turn = sum(isinstance(m, ToolMessage) for m in messages)
        return tool_call("write_file", {"path": f"f{turn}.py", "content": f"# {marker}\n"})

    # Latency interleaves the two runs' calls on the one agent.
    model = ScriptedChatModel(respond=respond, latency_s=0.05)
    agent = agent_with(model, FILE_TOOLS)

    def run_one(name: str) -> list[Any]:
        out = agent.invoke({"messages": [("user", name)]}, context=contexts[name])
        return list(out["messages"])

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(contexts, pool.map(run_one, contexts), strict=True))
    for name in contexts:
        staging = tmp_path / name / "staging"
        assert sorted(p.name for p in staging.iterdir()) == ["f0.py", "f1.py"]
        assert {p.read_text() for p in staging.iterdir()} == {f"# {name}\n"}
        statuses = [m.status for m in results[name] if isinstance(m, ToolMessage)]
        assert statuses == ["success", "success"]


def test_a_shared_agent_without_its_context_is_a_wiring_error() -> None:
    model = ScriptedChatModel(responses=[tool_call("list_files", {}), "ok"])
    with pytest.raises(ToolConfigError, match="context=ToolContext"):
        agent_with(model).invoke({"messages": [("user", "look")]})


def test_the_model_sees_each_tool_without_its_injected_runtime() -> None:
    for tool in ALL_TOOLS:
        spec = convert_to_openai_tool(tool)["function"]
        assert spec["name"] == tool.name and len(spec["description"]) > 40
        assert "runtime" not in spec["parameters"].get("properties", {}), tool.name
        assert "runtime" not in spec["parameters"].get("required", []), tool.name


def test_each_argument_the_model_sees_is_described_by_its_tools_docstring() -> None:
    # The schemas come from the functions: an argument's description is its line in the
    # docstring's Args: section, which is not part of the tool's description.
    for tool in EXECUTOR_TOOLS:
        spec = convert_to_openai_tool(tool)["function"]
        assert "Args:" not in spec["description"] and "runtime" not in spec["description"]
        for name, field in spec["parameters"]["properties"].items():
            assert len(field.get("description", "")) > 10, (tool.name, name)
    fields = {
        t.name: convert_to_openai_tool(t)["function"]["parameters"]["properties"]
        for t in MEMORY_TOOLS
    }
    assert f"max {MAX_CONTENT_CHARS} characters" in fields["remember"]["content"]["description"]
    assert f"(1-{MAX_RECALL_LIMIT})" in fields["recall"]["limit"]["description"]
    assert fields["recall"]["limit"]["maximum"] == MAX_RECALL_LIMIT
    assert fields["remember"]["type"]["enum"] == list(MEMORY_TYPES)


def test_a_tools_manual_is_sent_without_its_docstrings_layout() -> None:
    # Every call that offers the tools sends their manuals: the docstring's indentation and
    # hard line wraps cost tokens and say nothing. A paragraph is one line.
    for tool in EXECUTOR_TOOLS:
        description = convert_to_openai_tool(tool)["function"]["description"]
        assert description == description.strip(), tool.name
        for paragraph in description.split("\n"):
            assert paragraph and paragraph == " ".join(paragraph.split()), (tool.name, paragraph)
    (read_file,) = (t for t in EXECUTOR_TOOLS if t.name == "read_file")
    assert "\n" in read_file.description  # its two paragraphs stay two


def test_an_agent_is_told_which_argument_it_left_out(
    context: ToolContext, area: dict[str, Path]
) -> None:
    model = ScriptedChatModel(
        responses=[tool_call("write_file", {"content": "x = 1\n"}, id="m1"), "done"]
    )
    final = agent_with(model).invoke({"messages": [("user", "write it")]}, context=context)
    (message,) = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert (message.tool_call_id, message.status) == ("m1", "error")
    assert json.loads(str(message.content)) == {
        "error": "invalid arguments for write_file: missing required argument 'path'. Nothing "
        "was changed; fix the arguments and call it again."
    }
    assert list(area["staging"].iterdir()) == []
