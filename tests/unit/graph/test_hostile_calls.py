"""Hostile tool calls through the real executor agent: each one is an error result, the run goes on.

The scripted executor first has generated code (run_python, in the sandbox) leave a FIFO, a
symlink loop, a 1,100-level tree, a non-UTF-8 file name and a link to /dev/zero in its staging
area, then makes the calls issue 13 saw crash or hang a run, then does the step properly.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Plan
from atom_agent.testing import tool_call
from atom_agent.workspace import Workspace

from .scripts import ExecutorScript, models, passing_attempt, step, write

JOIN_S = 600.0  # the whole run; a hung tool call would never let it finish

MESS = """\
import os

os.mkfifo("pipe")
os.symlink("loop", "loop")
os.symlink("/dev/zero", "zero")
with open(b"caf\\xe9.txt", "wb") as handle:
    handle.write(b"needle\\n")
with open("aaa.txt", "w") as handle:
    handle.write("a" * 40 + "!\\n")
fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for _ in range(1100):
    os.mkdir("level", dir_fd=fd)
    child = os.open("level", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = child
os.close(fd)
print("mess made")
"""

# The deep tree goes before the step is committed: copying it is the workspace's matter.
CLEAN = """\
import os

# Pull the tree up one level at a time: short paths, two names, no fd per level.
while os.path.isdir("level/level"):
    os.rename("level/level", "lifted")
    os.rmdir("level")
    os.rename("lifted", "level")
os.rmdir("level")
print("tree removed")
"""

CODE = "def add(a, b):\n    return a + b\n"

# (tool, args, what the error result must say)
HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("write_file", {"path": "x" * 300, "content": "x"}, "path is 300 characters"),
    ("write_file", {"path": CODE, "content": ""}, "put the code in `content`"),
    ("read_file", {"path": "a/" * 2100 + "x"}, "path is 4201 characters"),
    ("write_file", {"path": "s.py", "content": "x = '\ud800'\n"}, "lone UTF-16 surrogate"),
    ("write_file", {"path": "\ud800.py", "content": "x"}, "lone UTF-16 surrogate"),
    ("read_file", {"path": "loop"}, "symlink loop"),
    ("write_file", {"path": "loop/x.py", "content": "x"}, "symlink loop"),
    ("read_file", {"path": "pipe"}, "named pipe (FIFO)"),
    ("write_file", {"path": "pipe", "content": "x"}, "named pipe (FIFO)"),
    ("edit_file", {"path": "pipe", "old_text": "a", "new_text": "b"}, "named pipe (FIFO)"),
    ("write_file", {"path": "zero", "content": "x"}, "leaves the allowed area"),
    ("read_file", {"path": "level/" * 70 + "x.py"}, "directories deep"),
    ("search_files", {"pattern": "(a|a)+$", "regex": True}, "took longer than"),
]
# ...and calls that must succeed on the same mess.
BENIGN: list[tuple[str, dict[str, Any], str]] = [
    ("list_files", {"path": "."}, "caf\\\\xe9.txt"),
    ("search_files", {"pattern": "needle"}, "caf\\\\xe9.txt:1: needle"),
    ("search_files", {"pattern": "(a+)+$", "regex": True}, '"count": 0'),
]


def lift_deep_trees(workspace: Path) -> None:
    """Remove any 'level' chain left in a staging area (pytest's rmtree recurses too deep)."""
    for staging in workspace.glob("runs/*/steps/*/attempts/*/staging"):
        top = staging / "level"
        while (top / "level").is_dir():
            for extra in top.iterdir():
                if extra.name != "level":
                    extra.unlink()
            (top / "level").rename(staging / "lifted")
            top.rmdir()
            (staging / "lifted").rename(top)
        if top.is_dir():
            for extra in top.iterdir():
                extra.unlink()
            top.rmdir()


@pytest.fixture
def workspace_cleanup(ctx: Context) -> Iterator[None]:
    yield
    lift_deep_trees(Path(ctx.workspace))


@pytest.mark.usefixtures("workspace_cleanup")
def test_hostile_calls_through_the_executor_end_in_results_and_the_run_goes_on(
    ctx: Context,
) -> None:
    ctx = Context(workspace=ctx.workspace, max_attempts=1, max_tool_calls=60, max_replans=0)
    calls = [(t, a) for t, a, _ in HOSTILE + BENIGN]
    replies = [
        write("make_mess.py", MESS),
        tool_call("run_python", {"path": "make_mess.py"}),
        *[tool_call(name, args) for name, args in calls],
        write("clean_mess.py", CLEAN),
        tool_call("run_python", {"path": "clean_mess.py"}),
        *passing_attempt(),
    ]
    script = ExecutorScript({("adder", 1): replies})
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        seen.append(list(messages))
        return script(messages, info)

    roles = models([Plan(steps=[step("adder")])], script)
    roles["executor"] = type(roles["executor"])(respond=respond)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["outcome"] = run_task("add numbers", ctx, models=roles)
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever escaped
            box["raised"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the run hung"
    assert "raised" not in box, f"the run raised {box.get('raised')!r}"
    outcome = box["outcome"]
    assert outcome.status == "done", outcome

    results = [m for m in seen[-1] if isinstance(m, ToolMessage)]
    made = json.loads(str(results[1].content))
    assert made["ok"] and "mess made" in made["output"], made  # the generated code ran
    for (name, _, expected), result in zip(HOSTILE, results[2:], strict=False):
        assert result.name == name and result.status == "error", result
        assert expected in json.loads(str(result.content))["error"], result.content
    for (name, _, expected), result in zip(BENIGN, results[2 + len(HOSTILE) :], strict=False):
        assert result.name == name and result.status == "success", result
        assert expected in str(result.content), result.content
    ws = Workspace(ctx.workspace)
    history = json.dumps(ws.read_history(ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1)))
    assert "named pipe (FIFO)" in history and "symlink loop" in history
