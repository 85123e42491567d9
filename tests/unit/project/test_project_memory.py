"""What a run learns about a project, in the next run on it: the baseline and where things live."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import BaseMessage

from atom_agent import run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.testing import ScriptedChatModel, reply_of

from .calc import GOOD_ADD, GOOD_MUL, answers, ctx, project


def _baseline(tmp_path: Path, run_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (tmp_path / "ws" / "runs" / run_id / "baseline.json").read_text()
    )
    return data


def test_the_second_run_on_a_project_reuses_its_baseline_and_recalls_where_code_lives(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path / "proj")
    context = ctx(tmp_path, repo)
    first = run_task("Implement `calc.add` as its docstring says.", context,
                     models=answers(add=GOOD_ADD))  # fmt: skip
    assert first.status == "done" and _baseline(tmp_path, first.run_id)["reused"] is False

    locate_prompts: list[str] = []
    edits = answers(mul=GOOD_MUL)

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        text = str(messages[-1].content)
        if info.purpose == "project_plan":
            locate_prompts.append(text)
            return "calc/__init__.py::mul"
        return str(reply_of(edits.respond, messages, info) if edits.respond else "")

    second = run_task("Make the product function work as documented.", context,
                      models=ScriptedChatModel(respond=respond))  # fmt: skip
    assert second.status == "done", second.stop_reason
    # The same tree, command and interpreter: the suite was not run again before the change.
    assert _baseline(tmp_path, second.run_id)["reused"] is True
    # Where the first run's change lives reached the second run's localisation prompt.
    assert "`add` is defined in `calc/__init__.py`" in locate_prompts[0]


def test_a_changed_tree_gets_a_new_baseline(tmp_path: Path) -> None:
    repo = project(tmp_path / "proj")
    context = ctx(tmp_path, repo)
    first = run_task("Implement `calc.add`.", context, models=answers(add=GOOD_ADD))
    (repo / "tests" / "test_more.py").write_text("def test_more():\n    assert True\n")
    from .calc import git

    git(repo, "add", "-A")
    git(repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "more tests")
    second = run_task("Implement `calc.add`.", context, models=answers(add=GOOD_ADD))
    assert _baseline(tmp_path, first.run_id)["reused"] is False
    baseline = _baseline(tmp_path, second.run_id)
    assert baseline["reused"] is False
    assert "tests/test_more.py::test_more" in baseline["suite"]["ids"]["passed"]  # type: ignore[index]
