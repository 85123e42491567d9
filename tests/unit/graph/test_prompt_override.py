"""A user's prompts replace the built-in ones by name, and the report names those the run sent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, SystemMessage

from atom_agent import Context, run_task
from atom_agent.errors import ConfigError
from atom_agent.nodes.executor.node import EXECUTOR_DECIDE, EXECUTOR_SYSTEM
from atom_agent.nodes.planner import PLANNER_SYSTEM
from atom_agent.testing import ScriptedChatModel

from .scripts import ExecutorScript, models, read, write
from .test_tool_loop_start import BOTH, BROKEN_SUB, TASK, _plan

EXECUTOR_RULES = "My executor rules. {ambiguity} Braces {like this} stay."
PLANNER_RULES = "My planner rules: at most {max_steps} steps."


def _systems(model: ScriptedChatModel) -> list[str]:
    found: list[str] = []
    for call in model.calls:
        first: BaseMessage = call.messages[0]
        if isinstance(first, SystemMessage):
            found.append(str(first.content))
    return found


def _run(tmp_path: Path, **prompts: str) -> tuple[object, dict[str, ScriptedChatModel], Path]:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0,
                  ask_user=False, **prompts)  # fmt: skip
    script = ExecutorScript({("calc", 1): [read("impl.py"), write("impl.py", BOTH)]},
                            plain=f"```python\n{BROKEN_SUB}```\n")  # fmt: skip
    roles = models([_plan()], script)
    outcome = run_task(TASK, ctx, models=roles)
    return outcome, roles, Path(outcome.run_dir)  # type: ignore[attr-defined]


def test_the_users_prompts_replace_the_built_in_ones_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    _, roles, run_dir = _run(tmp_path, executor_prompt=EXECUTOR_RULES, planner_prompt=PLANNER_RULES)
    loop = [c for c in roles["executor"].calls if c.tools]
    assert loop, "the tool loop ran"
    expected = f"My executor rules. {EXECUTOR_DECIDE} Braces {{like this}} stay."
    assert {str(c.messages[0].content) for c in loop} == {expected}
    assert _systems(roles["planner"]) == ["My planner rules: at most 12 steps."]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["prompts_replaced"] == ["EXECUTOR_SYSTEM", "PLANNER_SYSTEM"]
    assert run["prompts_unsent"] == []
    report = (run_dir / "report.md").read_text()
    assert "**Prompts:** yours replaced EXECUTOR_SYSTEM, PLANNER_SYSTEM\n" in report


def test_any_named_prompt_is_replaced_and_one_never_sent_is_not_reported_as_replaced(
    tmp_path: Path,
) -> None:
    replaced = {
        "PLANNER_TASK": "Plan this: {task}{replan}{feedback}",
        "OUT_OF_ROOM": "never sent: the conversation fits",
    }
    _, roles, run_dir = _run(tmp_path, prompts=replaced)
    asked = [
        str(c.messages[-1].content) for c in roles["planner"].calls if c.info.purpose == "plan"
    ]
    assert asked and all(text.startswith("Plan this: ") for text in asked)
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["prompts_replaced"], run["prompts_unsent"]) == (["PLANNER_TASK"], ["OUT_OF_ROOM"])
    report = (run_dir / "report.md").read_text()
    assert "**Prompts:** yours replaced PLANNER_TASK; given but not sent in this run: " \
        "OUT_OF_ROOM\n" in report  # fmt: skip


def test_a_prompt_name_that_does_not_exist_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown prompt.*NO_SUCH_PROMPT"):
        _run(tmp_path, prompts={"NO_SUCH_PROMPT": "x"})


def test_without_prompts_the_built_in_ones_are_sent_and_nothing_is_reported(
    tmp_path: Path,
) -> None:
    _, roles, run_dir = _run(tmp_path)
    loop = [c for c in roles["executor"].calls if c.tools]
    assert {str(c.messages[0].content) for c in loop} == {
        EXECUTOR_SYSTEM.format(ambiguity=EXECUTOR_DECIDE)
    }
    assert _systems(roles["planner"]) == [PLANNER_SYSTEM.format(max_steps=12)]
    assert "prompts_replaced" not in json.loads((run_dir / "run.json").read_text())
    assert "**Prompts:**" not in (run_dir / "report.md").read_text()


def test_a_prompt_file_that_cannot_be_read_or_is_empty_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    for option, path, said in (
        (["--executor-prompt"], tmp_path / "missing.txt", "cannot read"),
        (["--executor-prompt"], empty, "is empty"),
        (["--prompt"], f"DRAFT_TASK={empty}", "is empty"),
        (["--prompt"], "DRAFT_TASK", "is not NAME=FILE"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "atom_agent.cli", "run", "x", *option, str(path)],
            capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/bin:/bin", "ATOM_WORKSPACE": str(tmp_path / "ws")},
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert option[0] in done.stderr and said in done.stderr
