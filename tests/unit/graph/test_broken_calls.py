"""A broken tool call (cut off at the token limit) is asked again, not taken for an answer."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from .scripts import ADD_TEST, ExecutorScript, models, passing_attempt, step

CUT_OFF = '{"name": "write_file", "arguments": {"path": "test.py", "content": "from impl import'


def _broken() -> AIMessage:
    return AIMessage(
        content=CUT_OFF,
        invalid_tool_calls=[
            {
                "name": None,
                "args": CUT_OFF,
                "id": "call_broken",
                "error": "reply is not complete JSON (finish_reason=length)",
                "type": "invalid_tool_call",
            }
        ],
        response_metadata={"finish_reason": "length"},
        usage_metadata={"input_tokens": 1000, "output_tokens": 1024, "total_tokens": 2024},
    )


def test_a_cut_off_tool_call_is_asked_again_with_a_note(ctx: Context) -> None:
    script = ExecutorScript({("adder", 1): passing_attempt()})
    calls: list[list[BaseMessage]] = []
    broken_left = [1]  # the call that should write test.py is cut off, once

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        calls.append(list(messages))
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn == 1 and broken_left:
            broken_left.pop()
            return _broken()
        return script(messages, info)

    roles = models([Plan(steps=[step("adder")])], script)
    roles["executor"] = ScriptedChatModel(respond=respond)
    outcome = run_task("add numbers", ctx, models=roles)

    assert outcome.status == "done", outcome
    reask = calls[2]  # impl.py written, the broken reply, then this
    assert isinstance(reask[-1], HumanMessage)
    assert "cut off at the token limit" in str(reask[-1].content)
    assert not any(CUT_OFF in str(m.content) for m in reask)  # the broken text is not replayed
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1)
    history = json.dumps(ws.read_history(attempt))
    assert "from impl import" in history and CUT_OFF not in history
    assert outcome.usage["total_tokens"] >= 2024  # the wasted call still counts


def test_a_reply_broken_twice_ends_the_attempt_without_looping(ctx: Context) -> None:
    ctx = Context(workspace=ctx.workspace, max_attempts=1, max_replans=0, candidate_zero=False)
    calls: list[int] = []

    def respond(messages: list[BaseMessage]) -> AIMessage:
        calls.append(len(messages))
        return _broken()

    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = ScriptedChatModel(respond=respond)
    outcome = run_task("add numbers", ctx, models=roles)

    assert outcome.status == "failed"
    assert len(calls) == 2  # asked once more, then the attempt ended


def _cut_off(text: str) -> AIMessage:
    broken = _broken()
    call = {**broken.invalid_tool_calls[0], "args": text}
    return broken.model_copy(update={"content": text, "invalid_tool_calls": [call]})


def test_a_cut_off_write_keeps_its_complete_lines_and_the_attempt_goes_on(ctx: Context) -> None:
    # A small model repeating one assertion until the token limit: what it wrote before the
    # repeats is a good test file. It is written, and the model is told, without a re-ask.
    repeating = ADD_TEST + "    assert add(2, 3) == 5\n" * 60
    raw = json.dumps({"name": "write_file", "arguments": {"path": "test.py", "content": repeating}})
    script = ExecutorScript({("adder", 1): passing_attempt()})
    calls: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        calls.append(list(messages))
        if sum(isinstance(m, AIMessage) for m in messages) == 1:
            return _cut_off(raw[:400])
        return script(messages, info)

    roles = models([Plan(steps=[step("adder")])], script)
    roles["executor"] = ScriptedChatModel(respond=respond)
    outcome = run_task("add numbers", ctx, models=roles)

    assert outcome.status == "done", outcome
    assert len(calls) == 3  # impl.py, the cut-off test.py, run_tests: nothing asked again
    note = calls[2][-1]
    assert isinstance(note, HumanMessage) and "cut off at the token limit" in str(note.content)
    assert "test.py was saved with its first 5 complete lines" in str(note.content)
    ws = Workspace(ctx.workspace)
    committed = ws.step(ws.run(outcome.run_id), "adder").artifacts / "test.py"
    assert committed.read_text() == ADD_TEST
    assert outcome.usage["total_tokens"] >= 2024  # the cut-off call's tokens count
