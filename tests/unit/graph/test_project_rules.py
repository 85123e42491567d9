"""A rule said once holds in later runs: remembered, carried by every call, turned into a check.

Scripted models (replies chosen by call metadata, never by prompt text), the real workspace,
sandbox, Chroma store and embeddings.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.rule_text import RULES_HEADER
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace, read_json

from .scripts import WHOLE_TASK, planner_model

RULE = "a negative count raises ValueError"
FIRST = (
    "Standing rules for every function of this project from now on: a negative count raises "
    "ValueError. Write double(count: int) -> int that returns twice count, e.g. double(2) == 4. "
    "Include pytest tests."
)
SECOND = "Write triple(count: int) -> int that returns three times count, e.g. triple(2) == 6."
DOUBLE = (
    "def double(count: int) -> int:\n    if count < 0:\n        raise ValueError('count')\n"
    "    return 2 * count\n"
)
TRIPLE_BREAKS_RULE = "def triple(count: int) -> int:\n    return 3 * count\n"
TRIPLE_KEEPS_RULE = (
    "def triple(count: int) -> int:\n    if count < 0:\n        raise ValueError('count')\n"
    "    return 3 * count\n"
)


class Recorder:
    """Answers whole-task calls with `plain`, every other call with `draft`; keeps each prompt."""

    def __init__(self, plain: str, draft: str) -> None:
        self.plain, self.draft = plain, draft
        self.prompts: list[tuple[str, str]] = []

    def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        self.prompts.append((info.purpose, "\n".join(str(m.content) for m in messages)))
        code = self.plain if info.purpose in WHOLE_TASK else self.draft
        return AIMessage(content=f"```python\n{code}```\n")


def _models(recorder: Recorder) -> dict[str, object]:
    return {
        "planner": planner_model([]),
        "executor": ScriptedChatModel(respond=recorder, model_name="qwen2.5-coder:1.5b"),
    }


def test_a_rule_stated_once_reaches_every_call_of_a_later_run_and_becomes_its_check(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2)
    first = run_task(FIRST, ctx, models=_models(Recorder(DOUBLE, DOUBLE)))  # type: ignore[arg-type]
    ws = Workspace(ctx.workspace)
    stated = ws.read_run(ws.run(first.run_id))["rules"]
    assert len(stated["stated"]) == 1 and stated["carried"] == []

    recorder = Recorder(TRIPLE_BREAKS_RULE, TRIPLE_KEEPS_RULE)
    second = run_task(SECOND, ctx, models=_models(recorder))  # type: ignore[arg-type]

    # Every call of the second run carried the rule, in the block that names it as a rule.
    assert recorder.prompts
    for purpose, prompt in recorder.prompts:
        assert RULES_HEADER in prompt and RULE in prompt, purpose
    run = ws.run(second.run_id)
    info = ws.read_run(run)
    assert info["task"] == SECOND  # run.json keeps the user's words
    assert info["rules"]["carried"] == stated["stated"]
    # The rule was a clause the checks could execute: the plain answer broke it, so the
    # draft that keeps it was committed, and the report says the rule was verified.
    (applied,) = info["rules"]["applied"]
    assert applied["status"] == "verified", info["clauses"]
    impl = next((run.path / "steps").glob("*/committed/artifacts/impl.py"))
    assert "raise ValueError" in impl.read_text()
    histories = list((run.path / "steps").glob("*/attempts/*/messages/history.json"))
    assert histories and all(
        read_json(h)["memories_carried"] == stated["stated"] for h in histories
    )
    report = (run.path / "report.md").read_text()
    assert "## Project rules" in report and "stated earlier; verified" in report


def test_a_task_without_rules_carries_none_and_states_none(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1)
    recorder = Recorder(TRIPLE_KEEPS_RULE, TRIPLE_KEEPS_RULE)
    outcome = run_task(SECOND, ctx, models=_models(recorder))  # type: ignore[arg-type]
    ws = Workspace(ctx.workspace)
    info = ws.read_run(ws.run(outcome.run_id))
    assert info["rules"] == {"stated": [], "carried": [], "superseded": [], "rules": {},
                             "words": {}}  # fmt: skip
    assert all(RULES_HEADER not in prompt for _, prompt in recorder.prompts)


TWO_DEMANDS = (
    "From now on every function of this project is safe to call from two threads at once, and "
    "for a negative count it raises ValueError. Write double(count: int) -> int that returns "
    "twice count, e.g. double(2) == 4."
)


def test_a_rule_asking_two_things_is_verified_only_in_the_part_its_checks_ran_on(
    tmp_path: Path,
) -> None:
    """One rule, two demands: a check of the error does not verify the thread-safety demand."""
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2)
    run_task(TWO_DEMANDS, ctx, models=_models(Recorder(DOUBLE, DOUBLE)))  # type: ignore[arg-type]
    second = run_task(SECOND, ctx, models=_models(Recorder(TRIPLE_KEEPS_RULE, TRIPLE_KEEPS_RULE)))  # type: ignore[arg-type]
    ws = Workspace(ctx.workspace)
    run = ws.run(second.run_id)
    info = ws.read_run(run)
    (applied,) = info["rules"]["applied"]
    assert len(applied["clauses"]) == 2, info["clauses"]
    assert applied["status"] == "partly" and len(applied["verified"]) == 1, applied
    (threads,) = applied["unchecked"]
    assert threads in info["clauses"]["unchecked"]
    report = (run.path / "report.md").read_text()
    assert "verified in part (1 of 2 things it asks; no check of the rest ran: " in report
