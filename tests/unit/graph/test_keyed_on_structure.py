"""Scripted models key on what a call is for (its metadata), never on a prompt's wording."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

import atom_agent.graph  # noqa: F401  (imports every sender: the registry is complete)
from atom_agent import Context, prompts, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.testing import ScriptedChatModel

from .scripts import ExecutorScript, models, passing_attempt
from .test_tool_loop_start import BOTH, BROKEN_SUB, TASK, _plan

NAMES = """
PLANNER_SYSTEM PLANNER_TASK PLANNER_REPLAN
EXECUTOR_SYSTEM EXECUTOR_ASK EXECUTOR_DECIDE EXECUTOR_START
EXECUTOR_PINNED EXECUTOR_TIER2 EXECUTOR_TIER1 EXECUTOR_ANSWERS
ASK_USER_DESCRIPTION ASK_USER_WAIT BROKEN_CALL_NOTE MISSING_FILES_NOTE SALVAGED_NOTE
EARLIER_TURNS_NOTE OUT_OF_ROOM
PROJECT_SYSTEM PROJECT_LOCATE PROJECT_NOTES PROJECT_EDIT PROJECT_ADD PROJECT_ANEW
PLAIN_TASK DRAFT_TASK DRAFT_STEP DRAFT_DEPENDENCIES DRAFT_MEMORIES DRAFT_EARLIER
CONTRACT_TASK CONTRACT_CASES CONTRACT_CLAUSES CONTRACT_SCENARIO CONTRACT_STEP
PROJECT_CONTRACT PROJECT_CONTRACT_ORIGINS PROJECT_CONTRACT_AGAIN PROJECT_CONTRACT_USAGES
INVALID_ARGUMENTS TOOL_FAILED NO_SESSION
""".split()
"""Every prompt a user can replace (a new one is added here on purpose; docs/prompts.md)."""

STEP_PURPOSES = {"draft", "witness", "tool_loop", "contract", "project_edit", "reproduction"}
"""Purposes of calls that work on one step: their metadata names the step and the attempt."""

Call = tuple[str, str, str, int, str]


def _unrelated() -> dict[str, str]:
    """Each prompt replaced by text that shares nothing with it (no prefix, no placeholder)."""
    return {name: f"Tides follow the moon, note {i}." for i, name in enumerate(prompts.names())}


def _calls(roles: dict[str, ScriptedChatModel]) -> list[Call]:
    return [
        (role, c.info.purpose, c.info.step, c.info.attempt, c.info.source)
        for role, model in roles.items()
        for c in model.calls
    ]


def _sent_text(roles: dict[str, ScriptedChatModel]) -> str:
    return "\n".join(str(m.content) for model in roles.values() for c in model.calls
                     for m in c.messages)  # fmt: skip


def _module_run(tmp_path: Path, replaced: dict[str, str]) -> tuple[str, list[Call], Any]:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0, prompts=replaced)
    fixed = passing_attempt(
        BOTH, "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    script = ExecutorScript({("calc", 1): fixed}, plain=f"```python\n{BROKEN_SUB}```\n")
    roles = models([_plan()], script)
    outcome = run_task(TASK, ctx, models=roles)
    run = json.loads((Path(outcome.run_dir) / "run.json").read_text())
    return outcome.status, _calls(roles), (run, _sent_text(roles))


HALVE = '''"""Halves."""


def halve(x):
    """Half of x."""
    raise NotImplementedError
'''
NO_TEST = "def test_nothing():\n    assert True\n"


def _git_project(root: Path) -> Path:
    """A project of one blanked function and a test, committed on `main` in a new repository."""
    for rel, text in {"halves/__init__.py": HALVE, "tests/test_h.py": NO_TEST}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit = ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], commit):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def _project_responder(messages: list[BaseMessage], info: CallInfo) -> str:
    if info.purpose == "reproduction" and info.attempt == 1:  # stops before halve runs
        return "```python\nfrom halves import halve\n\ndef test_h():\n    assert halve() == 4\n```"
    if info.purpose == "reproduction":  # asked again: reaches halve
        return "```python\nfrom halves import halve\n\ndef test_h():\n    assert halve(8) == 4\n```"
    if info.purpose == "project_edit" and info.attempt == 1:
        return "```python\ndef halve(x):\n    return x // 3\n```"  # fails halve(8) == 4
    if info.purpose == "project_edit":
        return "```python\ndef halve(x):\n    return x / 2\n```"
    return "no idea"


def _project_run(tmp_path: Path, replaced: dict[str, str]) -> tuple[str, list[Call], Any]:
    repo = _git_project(tmp_path / "proj")
    ctx = Context(workspace=str(tmp_path / "ws"), repo=str(repo), sandbox_timeout_s=60,
                  max_attempts=2, prompts=replaced)  # fmt: skip
    model = ScriptedChatModel(respond=_project_responder)
    outcome = run_task("Implement `halves.halve` as its docstring says.", ctx, models=model)
    run = json.loads((Path(outcome.run_dir) / "run.json").read_text())
    return outcome.status, _calls({"model": model}), (run, _sent_text({"model": model}))


def test_the_registry_holds_every_prompt_by_name() -> None:
    assert prompts.names() == sorted(NAMES)
    assert all(prompts.default(n).strip() for n in NAMES)


def test_replacing_every_prompt_with_unrelated_text_changes_no_reply_of_a_module_run(
    tmp_path: Path,
) -> None:
    status, calls, (_, sent) = _module_run(tmp_path / "before", {})
    assert status == "done"
    assert {c[1] for c in calls} >= {"plan", "plain", "tool_loop"}
    assert "Tides follow the moon" not in sent
    replaced = _unrelated()
    after_status, after_calls, (run, after_sent) = _module_run(tmp_path / "after", replaced)
    assert (after_status, after_calls) == (status, calls)
    # The replacements were what the model was sent, and the report names exactly those.
    assert "Tides follow the moon" in after_sent
    assert run["prompts_replaced"] and set(run["prompts_replaced"]) | set(
        run["prompts_unsent"]
    ) == set(replaced)
    for name in run["prompts_replaced"]:
        assert prompts.default(name) not in after_sent


def test_replacing_every_prompt_with_unrelated_text_changes_no_reply_of_a_project_run(
    tmp_path: Path,
) -> None:
    status, calls, _ = _project_run(tmp_path / "before", {})
    assert status == "done"
    purposes = [(c[1], c[3]) for c in calls]
    assert ("reproduction", 2) in purposes and ("project_edit", 2) in purposes
    after_status, after_calls, (run, sent) = _project_run(tmp_path / "after", _unrelated())
    assert (after_status, after_calls) == (status, calls)
    assert "PROJECT_EDIT" in run["prompts_replaced"] and "Tides follow the moon" in sent


def test_every_call_says_what_it_is_for_fully_on_both_paths(tmp_path: Path) -> None:
    _, module_calls, _ = _module_run(tmp_path / "module", {})
    _, project_calls, _ = _project_run(tmp_path / "project", {})
    for role, purpose, step, attempt, source in [*module_calls, *project_calls]:
        assert purpose and source in prompts.names(), (role, purpose, source)
        if purpose in STEP_PURPOSES:
            assert step and (attempt >= 1 or purpose == "contract"), (purpose, step, attempt)
    sources = {(c[1], c[3], c[4]) for c in project_calls if c[1] == "reproduction"}
    assert sources == {
        ("reproduction", 1, "PROJECT_CONTRACT"),
        ("reproduction", 2, "PROJECT_CONTRACT_AGAIN"),
    }


def test_run_json_and_the_report_count_the_calls_of_each_purpose(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    script = ExecutorScript(
        {("calc", 1): passing_attempt(BOTH)}, plain=f"```python\n{BROKEN_SUB}```\n"
    )
    roles = models([_plan()], script)
    outcome = run_task(TASK, ctx, models=roles)
    made: dict[str, int] = {}
    for model in roles.values():
        for call in model.calls:
            made[call.info.purpose] = made.get(call.info.purpose, 0) + 1
    run_dir = Path(outcome.run_dir)
    calls = json.loads((run_dir / "run.json").read_text())["calls"]
    assert {p: int(row["calls"]) for p, row in calls.items()} == made
    assert made["tool_loop"] == 3 and made["plain"] == 1 and made["plan"] == 1
    assert all(row["input_tokens"] > 0 and row["output_tokens"] > 0 for row in calls.values())
    report = (run_dir / "report.md").read_text()
    assert "## Model calls by purpose" in report and "| tool_loop | 3 |" in report
