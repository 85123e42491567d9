"""history.json cleaning, and atomicity under a real SIGKILL between temp write and rename."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from atom_agent.errors import WorkspaceError
from atom_agent.workspace import Workspace, clean_message
from atom_agent.workspace._commit import current_attempt


def conversation() -> list[object]:
    ai = AIMessage(
        content=[
            {"type": "thinking", "thinking": "plan it", "signature": "c2lnbmF0dXJl" * 50},
            {"type": "text", "text": "Writing impl.py", "extras": {"signature": "abc"}},
        ],
        id="run-123",
        tool_calls=[
            {
                "name": "write_file",
                "args": {"path": "impl.py", "content": "x = 1\n"},
                "id": "call_1",
                "type": "tool_call",
            }
        ],
        response_metadata={
            "model_name": "gemini-2.5-pro",
            "finish_reason": "STOP",
            "safety_ratings": [],
        },
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        additional_kwargs={"__gemini_function_call_thought_signatures__": {"call_1": "sig"}},
    )
    return [
        SystemMessage(content="You are the executor.", id="sys-1"),
        HumanMessage(content="Implement an LRU cache.", id="h-1"),
        ai,
        ToolMessage(
            content='{"written": "impl.py"}',
            tool_call_id="call_1",
            name="write_file",
            id="t-1",
            status="success",
            artifact={"big": "x" * 100},
        ),
        ToolMessage(
            content='{"error": "no such file"}',
            tool_call_id="call_2",
            name="read_file",
            status="error",
        ),
        AIMessage(
            content="Done.",
            id="run-124",
            usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        ),
    ]


def test_cleaning_drops_provider_bookkeeping_and_keeps_tool_traffic() -> None:
    cleaned = [clean_message(m) for m in conversation()]  # type: ignore[arg-type]
    text = json.dumps(cleaned)
    for gone in (
        "run-123",
        "sys-1",
        "usage",
        "response_metadata",
        "gemini-2.5-pro",
        "signature",
        "c2lnbmF0dXJl",
        "thought_signatures",
        "artifact",
        "additional",
    ):
        assert gone not in text, gone
    assert [m["type"] for m in cleaned] == ["system", "human", "ai", "tool", "tool", "ai"]
    ai = cleaned[2]
    assert ai["tool_calls"] == [
        {"name": "write_file", "args": {"path": "impl.py", "content": "x = 1\n"}, "id": "call_1"}
    ]
    assert ai["content"][0] == {"type": "thinking", "thinking": "plan it"}
    assert cleaned[3] == {
        "type": "tool",
        "content": '{"written": "impl.py"}',
        "name": "write_file",
        "tool_call_id": "call_1",
        "status": "success",
    }
    assert cleaned[4]["status"] == "error"


def test_messages_to_dict_envelopes_and_unknown_types() -> None:
    from langchain_core.messages import messages_to_dict

    envelope = messages_to_dict([HumanMessage(content="hi", id="x")])[0]
    assert clean_message(envelope) == {"type": "human", "content": "hi"}
    with pytest.raises(WorkspaceError, match="type 'weird'"):
        clean_message({"type": "weird", "content": "?"})


def test_history_round_trip_and_replacement(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    step = ws.create_step(ws.create_run("r1", task="t"), "s1")
    attempt = ws.new_attempt(step)
    # A stale file (e.g. from a crashed earlier process) is replaced, never appended to.
    attempt.history_json.write_text(
        '{"schema_version": 1, "messages": [{"type": "human", "content": "stale"}]}'
    )
    ws.write_history(attempt, conversation())  # type: ignore[arg-type]
    stored = ws.read_history(attempt)
    assert len(stored) == 6 and "stale" not in json.dumps(stored)
    data = json.loads(attempt.history_json.read_text())
    assert (data["run_id"], data["step_id"], data["attempt"]) == ("r1", "s1", 1)
    assert stored[2]["tool_calls"][0]["id"] == "call_1"
    assert stored[3]["tool_call_id"] == "call_1"
    ws.write_history(attempt, [HumanMessage(content="second write")])
    assert ws.read_history(attempt) == [{"type": "human", "content": "second write"}]


CRASH = """
import os, signal, sys
from pathlib import Path
from langchain_core.messages import HumanMessage
from atom_agent.workspace import Workspace

ws = Workspace(sys.argv[1])
run = ws.run("r1")
step = ws.step(run, "s1")
attempt = ws.attempt(step, int(sys.argv[3]))
target = sys.argv[4]
real_replace = os.replace

def crash(src, dst):
    # The temp data is written and fsynced; die before the rename that publishes it.
    if Path(dst).name.startswith(target):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(src, dst)

os.replace = crash
if sys.argv[2] == "history":
    ws.write_history(attempt, [HumanMessage(content="NEW")])
else:
    ws.commit(step, attempt)
"""


def crash_in_child(ws: Workspace, what: str, attempt: int, target: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASH, str(ws.root), what, str(attempt), target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_killed_history_write_leaves_the_old_file_intact(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    step = ws.create_step(ws.create_run("r1", task="t"), "s1")
    attempt = ws.new_attempt(step)
    ws.write_history(attempt, [HumanMessage(content="OLD")])
    before = attempt.history_json.read_bytes()
    crash_in_child(ws, "history", 1, "history.json")
    assert attempt.history_json.read_bytes() == before
    assert ws.read_history(attempt) == [{"type": "human", "content": "OLD"}]
    leftovers = [p for p in attempt.messages_dir.iterdir() if p.name.startswith(".tmp-")]
    assert leftovers and "NEW" in leftovers[0].read_text()  # the kill came after the temp write
    ws.write_history(attempt, [HumanMessage(content="AGAIN")])  # the next write cleans up
    assert [p.name for p in attempt.messages_dir.iterdir()] == ["history.json"]


@pytest.mark.parametrize("target", ["artifacts", "version"])
def test_killed_commit_leaves_the_previous_commit_intact(tmp_path: Path, target: str) -> None:
    ws = Workspace(tmp_path)
    step = ws.create_step(ws.create_run("r1", task="t"), "s1")
    first = ws.new_attempt(step)
    (first.staging / "impl.py").write_text("OLD = True\n")
    ws.commit(step, first)
    second = ws.new_attempt(step)
    (second.staging / "impl.py").write_text("NEW = True\n")
    (second.staging / "extra.py").write_text("E = 1\n")
    # "version": die renaming the copied tree into place; "artifacts": die at the symlink swap.
    crash_in_child(ws, "commit", 2, "artifacts" if target == "artifacts" else ".attempt-2-")
    assert (step.artifacts / "impl.py").read_text() == "OLD = True\n"
    assert not (step.artifacts / "extra.py").exists()
    assert current_attempt(step.committed_dir) == 1
    ws.commit(step, second)  # a later commit succeeds and sweeps the leftovers
    assert (step.artifacts / "impl.py").read_text() == "NEW = True\n"
    assert sorted(p.name for p in step.committed_dir.iterdir())[0].startswith(".attempt-2-")
    assert len(list(step.committed_dir.iterdir())) == 2


def test_killed_first_commit_leaves_nothing_committed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    step = ws.create_step(ws.create_run("r1", task="t"), "s1")
    attempt = ws.new_attempt(step)
    (attempt.staging / "impl.py").write_text("X = 1\n")
    crash_in_child(ws, "commit", 1, "artifacts")
    assert current_attempt(step.committed_dir) is None and not step.artifacts.exists()
