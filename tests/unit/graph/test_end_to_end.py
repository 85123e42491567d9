"""The whole graph with scripted models, real workspace, real sandbox, real memory."""

from __future__ import annotations

import json

from atom_agent import Context, run_task
from atom_agent.state import Plan
from atom_agent.workspace import Workspace

from .scripts import ADD_IMPL, ExecutorScript, models, passing_attempt, read, step

DOUBLE_IMPL = "from deps.adder.impl import add\n\n\ndef double(x):\n    return add(x, x)\n"
DOUBLE_TEST = "from impl import double\n\n\ndef test_double():\n    assert double(4) == 8\n"


def test_two_steps_second_uses_the_first_committed_artifact(ctx: Context) -> None:
    plan = Plan(steps=[step("adder"), step("doubler", depends_on=["adder"])])
    executor = ExecutorScript(
        {
            ("adder", 1): passing_attempt(),
            ("doubler", 1): [
                read("deps/adder/impl.py"),
                *passing_attempt(impl=DOUBLE_IMPL, test=DOUBLE_TEST),
            ],
        }
    )
    outcome = run_task("add and double", ctx, models=models([plan], executor), run_id="r1")

    assert outcome.status == "done", outcome
    assert outcome.step_status == {"adder": "committed", "doubler": "committed"}
    ws = Workspace(ctx.workspace)
    run = ws.run("r1")
    adder = ws.step(run, "adder")
    assert (adder.artifacts / "impl.py").read_text() == ADD_IMPL
    assert (ws.step(run, "doubler").artifacts / "impl.py").read_text() == DOUBLE_IMPL
    # Step 2's prompt named the dependency, the read succeeded, and the reflector's own test
    # run imported the committed dependency.
    assert "deps/adder/<file>" in executor.prompts[("doubler", 1)]
    assert str(adder.artifacts) not in executor.prompts[("doubler", 1)]  # no run's own path
    doubler_attempt = ws.attempt(ws.step(run, "doubler"), 1)
    history = ws.read_history(doubler_attempt)
    first_result = next(m for m in history if m.get("type") == "tool")
    assert "def add(a, b)" in str(first_result["content"])
    verdict = ws.read_verdict(doubler_attempt)
    assert verdict["outcome"] == "passed"
    assert verdict["tests"]["counts"]["passed"] == 1
    report = run.report_md.read_text()
    assert "```mermaid" in report and "s_adder --> s_doubler" in report
    assert json.loads(run.run_json.read_text())["status"] == "done"


def test_a_standard_model_is_asked_for_the_missing_files_not_forced(ctx: Context) -> None:
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    roles = models([Plan(steps=[step("adder")])], executor)
    assert run_task("add", ctx, models=roles).status == "done"
    calls = [call for call in roles["executor"].calls if call.tools]
    # Forced tool choice is only as reliable as the server; a call written as text is
    # recovered instead (steering/require_files.py).
    assert [call.kwargs.get("tool_choice") for call in calls] == [None, None, None]
    # After writing impl.py, the note names the file still missing.
    assert "test.py" in str(calls[1].messages[-1].content)


def test_a_local_model_may_only_write_until_the_files_exist_and_must_keep_working(
    ctx: Context,
) -> None:
    from typing import Any

    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from atom_agent.models import LocalChatModel

    seen: list[tuple[list[str], Any]] = []
    replies = passing_attempt()

    class RecordingLocal(LocalChatModel):
        """The local model's tool protocol, with scripted replies instead of llama.cpp."""

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            names = [t["function"]["name"] for t in kwargs.get("tools", [])]
            seen.append((names, kwargs.get("tool_choice")))
            return ChatResult(generations=[ChatGeneration(message=replies[len(seen) - 1])])

    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = RecordingLocal()  # type: ignore[assignment]
    assert run_task("add", ctx, models=roles).status == "done"  # type: ignore[arg-type]
    from atom_agent.models.local import _allowed_tools, allowed_tools_choice

    only_write = allowed_tools_choice(["write_file"])
    # Every tool stays bound (the prompt does not change); the choice narrows the reply.
    assert "run_tests" in seen[0][0] and seen[0][1] == only_write
    assert seen[1] == (seen[0][0], only_write)
    assert [
        t["function"]["name"]
        for t in _allowed_tools(  # type: ignore[index]
            [{"function": {"name": n}} for n in seen[0][0]], seen[0][1]
        )
    ] == ["write_file"]
    assert "run_tests" in seen[2][0] and seen[2][1] == "any"  # it never answers in prose


def test_a_local_model_stuck_rewriting_the_same_file_is_sampled(ctx: Context) -> None:
    from typing import Any

    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from atom_agent.models import LocalChatModel
    from atom_agent.nodes.executor.steering import UNSTUCK_TEMPERATURE

    from .scripts import BAD_TEST, run_tests, write

    temperatures: list[Any] = []
    replies = [
        write("impl.py", ADD_IMPL),
        write("test.py", BAD_TEST),
        run_tests(),
        write("test.py", BAD_TEST),  # greedy decoding repeats itself: the file is unchanged
        *passing_attempt(),
    ]

    class RecordingLocal(LocalChatModel):
        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            temperatures.append(kwargs.get("temperature"))
            return ChatResult(generations=[ChatGeneration(message=replies[len(temperatures) - 1])])

    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = RecordingLocal()  # type: ignore[assignment]
    assert run_task("add", ctx, models=roles).status == "done"  # type: ignore[arg-type]
    assert temperatures[:4] == [None, None, None, None]  # greedy until it repeats
    assert temperatures[4:] == [UNSTUCK_TEMPERATURE] * 3


def test_a_local_model_rewriting_impl_while_test_is_missing_is_told_and_sampled(
    ctx: Context,
) -> None:
    from typing import Any

    from langchain_core.messages import BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from atom_agent.models import LocalChatModel
    from atom_agent.nodes.executor.steering import UNSTUCK_TEMPERATURE

    from .scripts import write

    calls: list[tuple[Any, str]] = []
    replies = [
        write("impl.py", ADD_IMPL),
        write("impl.py", ADD_IMPL),  # greedy decoding repeats the file it has
        *passing_attempt()[1:],  # told what is missing: test.py, then run_tests
    ]

    class RecordingLocal(LocalChatModel):
        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:  # fmt: skip
            last = messages[-1]
            calls.append((kwargs.get("temperature"),
                          str(last.content) if isinstance(last, HumanMessage) else ""))  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=replies[len(calls) - 1])])

    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = RecordingLocal()  # type: ignore[assignment]
    assert run_task("add", ctx, models=roles).status == "done"  # type: ignore[arg-type]
    assert [t for t, _ in calls] == [None, None, UNSTUCK_TEMPERATURE, UNSTUCK_TEMPERATURE]
    assert "Still missing in your staging area: test.py" in calls[1][1]
    assert "Still missing in your staging area: test.py" in calls[2][1]
    assert "Still missing" not in calls[3][1]  # both files exist: no note


def test_the_local_model_takes_a_temperature_per_call() -> None:
    import pytest

    from atom_agent.errors import ModelError
    from atom_agent.models import LocalChatModel

    with pytest.raises(ModelError, match="temperature must be within"):
        LocalChatModel(model_path="/nonexistent.gguf").invoke("hi", temperature=3.0)
