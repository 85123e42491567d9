"""A project's rules in repo mode: AGENTS.md and a task's rule reach every edit of later runs."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import BaseMessage

from atom_agent import run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.rule_text import RULES_HEADER
from atom_agent.testing import ScriptedChatModel

from .calc import GOOD_ADD, GOOD_MUL, MODULE, TESTS, ctx, files_project, git

FILE_RULE = "Every public function keeps its docstring's first line unchanged."
TASK_RULE = "From now on every function of this project returns plain Python numbers."


def _one_definition(source: str, prompts: list[str]) -> ScriptedChatModel:
    """Answers every call with `source` (one target a run), keeping each call's whole prompt."""

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        prompts.append("\n".join(str(m.content) for m in messages))
        return "```python\n" + source + "```"

    return ScriptedChatModel(respond=respond)


def _run_json(tmp_path: Path, run_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (tmp_path / "ws" / "runs" / run_id / "run.json").read_text()
    )
    return data


def test_a_conventions_file_rule_and_a_task_rule_reach_the_edits_of_two_runs(
    tmp_path: Path,
) -> None:
    files = {"calc/__init__.py": MODULE, "tests/test_calc.py": TESTS,
             "AGENTS.md": f"# How we work\n\n- {FILE_RULE}\n"}  # fmt: skip
    repo = files_project(tmp_path / "proj", files)
    context = ctx(tmp_path, repo)

    first_prompts: list[str] = []
    first = run_task(f"{TASK_RULE} Implement `calc.add` as its docstring says.", context,
                     models=_one_definition(GOOD_ADD, first_prompts))  # fmt: skip
    assert first.status == "done", first.stop_reason
    stated = _run_json(tmp_path, first.run_id)["rules"]
    assert isinstance(stated, dict) and len(stated["stated"]) == 2
    # The file's rule is not in the task's words, so the first run's calls carry it.
    assert first_prompts and all(FILE_RULE in p for p in first_prompts)
    assert all(p.count(TASK_RULE) == 1 for p in first_prompts if "calc.add" in p)

    second_prompts: list[str] = []
    second = run_task("Implement `calc.mul` as its docstring says.", context,
                      models=_one_definition(GOOD_MUL, second_prompts))  # fmt: skip
    assert second.status == "done", second.stop_reason
    info = _run_json(tmp_path, second.run_id)["rules"]
    assert isinstance(info, dict) and sorted(info["carried"]) == sorted(stated["stated"])
    assert info["stated"] == []  # the file's rule was remembered already: nothing written twice
    for prompt in second_prompts:
        assert RULES_HEADER in prompt and FILE_RULE in prompt and TASK_RULE in prompt
    # The user's repository is untouched: its branch, its files.
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
