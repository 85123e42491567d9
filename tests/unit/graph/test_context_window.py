"""An attempt whose conversation outgrows the model's context window goes on, or ends, cleanly."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.errors import ContextWindowError
from atom_agent.nodes.executor.steering.context_window import EARLIER_TURNS_NOTE, OUT_OF_ROOM
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace

from .scripts import ADD_IMPL, ADD_TEST, BAD_TEST, ExecutorScript, models, run_tests, step, write


def _windowed(
    replies: list[AIMessage], window: int
) -> tuple[ScriptedChatModel, list[list[BaseMessage]]]:
    """An executor that refuses prompts of more than `window` messages, as llama.cpp does.

    The messages it sees include the system prompt and the per-call notes.
    """
    seen: list[list[BaseMessage]] = []
    left = list(replies)

    def respond(messages: list[BaseMessage]) -> AIMessage:
        seen.append(list(messages))
        if len(messages) > window:
            raise ContextWindowError("Requested tokens (8503) exceed context window of 8192")
        return left.pop(0) if left else AIMessage(content="Finished.")

    return ScriptedChatModel(respond=respond), seen


def test_earlier_turns_are_left_out_when_the_window_is_full(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    replies = [
        write("impl.py", ADD_IMPL),
        write("test.py", BAD_TEST),
        run_tests(),
        write("test.py", ADD_TEST),  # asked with the earlier turns left out
        run_tests(),
    ]
    executor, seen = _windowed(replies, window=6)
    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = executor
    outcome = run_task("add numbers", ctx, models=roles)

    assert outcome.status == "done", outcome
    # system + prompt; + impl.py turn and the missing-file note; + test.py turn; then the full
    # conversation (8, then 10) is refused twice and sent again as system, prompt, note, last turn.
    assert [len(m) for m in seen] == [2, 5, 6, 8, 5, 10, 5]
    for shorter in (seen[4], seen[6]):
        assert shorter[2].content == EARLIER_TURNS_NOTE and isinstance(shorter[3], AIMessage)
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1)
    history = ws.read_history(attempt)
    assert len(history) == 11  # the attempt's record keeps every turn
    assert EARLIER_TURNS_NOTE not in str(history)


def test_an_attempt_that_cannot_fit_ends_and_is_judged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(
        workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0, candidate_zero=False
    )
    executor, seen = _windowed([write("impl.py", ADD_IMPL)], window=2)
    roles = models([Plan(steps=[step("adder")])], ExecutorScript({}))
    roles["executor"] = executor
    outcome = run_task("add numbers", ctx, models=roles)

    assert outcome.status == "failed"  # a verdict, not a crash of the run
    assert [len(m) for m in seen] == [2, 5]  # nothing earlier to leave out: the attempt ends
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1)
    assert OUT_OF_ROOM in str(ws.read_history(attempt)[-1])
    assert ws.read_verdict(attempt)["missing_files"] == ["test.py"]
