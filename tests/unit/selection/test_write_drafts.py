"""An attempt's drafting on its own: `write_drafts` with a scripted model and the real sandbox.

The model is keyed on what each call is for (its metadata), never on the prompt: which
candidates are offered, which calls are made, which one is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from atom_agent import budget as budgets
from atom_agent.budget import RunBudget, watching
from atom_agent.models.purpose import CallInfo
from atom_agent.sandbox import Limits, default_runner
from atom_agent.selection.drafts import write_drafts
from atom_agent.selection.pool import ContractProver, Drafts, Yield
from atom_agent.state import Check
from atom_agent.testing import ScriptedChatModel

TASK = "Write add(a, b) that returns a + b, e.g. add(2, 3) == 5."
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
ALSO_WRONG = "def add(a, b):\n    return a - b + 4\n"  # add(2, 3) == 3, add(1, 1) == 4
CHECKS = [Check(call="add(2, 3)", expect="5", origin="task")]


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def model(drafts: Sequence[str], witnesses: Sequence[str] = ()) -> ScriptedChatModel:
    """Answers the draft request with `drafts`, witness requests with `witnesses`, in turn."""
    queues = {"draft": list(drafts), "witness": list(witnesses)}

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        assert info.source == "DRAFT_TASK", info
        return queues[info.purpose].pop(0)

    return ScriptedChatModel(respond=respond)


def draft(tmp_path: Path, chat: ScriptedChatModel, **kw: object) -> Drafts:
    args: dict[str, object] = {
        "checks": CHECKS,
        "witnesses": 2,
        "first": None,
        "drawn": (),
        **kw,
    }
    prover = ContractProver(folder=tmp_path / "candidates", checks=[], defines=["add"],
                            available=[], python_path=[], runner=default_runner(),
                            limits=Limits(timeout_s=20.0))  # fmt: skip
    return write_drafts(
        model=chat, prompt="Write impl.py.", temperature=0.0, task=TASK, defines=["add"],
        prover=prover, **args,  # type: ignore[arg-type]
    )  # fmt: skip


def origins(drafts: Drafts) -> list[str]:
    return [c.origin for c in drafts.candidates]


def purposes(chat: ScriptedChatModel) -> list[str]:
    return [c.info.purpose for c in chat.calls]


def test_a_draft_that_meets_the_contract_is_the_attempt(tmp_path: Path) -> None:
    chat = model([fenced(RIGHT)])
    drafts = draft(tmp_path, chat)
    assert purposes(chat) == ["draft"] and origins(drafts) == ["draft"]
    assert drafts.met and drafts.best is drafts.candidates[0]
    assert drafts.yields() == {"draft": Yield(drawn=1, code=1, met=1, kept=1)}


def test_the_plain_answer_is_the_first_candidate_at_no_call(tmp_path: Path) -> None:
    chat = model([])
    drafts = draft(tmp_path, chat, first=RIGHT)
    assert chat.calls == [] and origins(drafts) == ["plain"] and drafts.met


def test_samples_drawn_already_are_the_first_witnesses_and_one_that_passes_ends_it(
    tmp_path: Path,
) -> None:
    chat = model([fenced(WRONG)])
    drafts = draft(tmp_path, chat, drawn=[ALSO_WRONG, RIGHT, WRONG])
    assert purposes(chat) == ["draft"]  # no witness sampled: the drawn one passed
    assert origins(drafts) == ["draft", "task_sample", "task_sample"]
    assert drafts.best is drafts.candidates[2] and drafts.met


def test_witnesses_that_do_no_better_leave_the_draft_kept(tmp_path: Path) -> None:
    # The spare call covers a reply without code: two witnesses with code are heard.
    chat = model([fenced(WRONG)], ["no code here", fenced(ALSO_WRONG), fenced(WRONG)])
    drafts = draft(tmp_path, chat)
    assert purposes(chat) == ["draft", "witness", "witness", "witness"]
    assert origins(drafts) == ["draft", "witness", "witness", "witness"]
    assert drafts.best is drafts.candidates[0] and not drafts.met  # the earliest of equals
    assert drafts.yields()["witness"] == Yield(drawn=3, code=2, met=0, kept=0)
    assert drafts.suspect == {}  # a check the task states is never outvoted
    assert len(drafts.spent) == 5  # the request, the draft, the witnesses' replies


def test_a_check_every_witness_contradicts_like_the_draft_is_suspect(tmp_path: Path) -> None:
    wrong_check = Check(call="add(2, 2)", expect="5", origin="planner")
    chat = model([fenced(RIGHT)], [fenced(RIGHT), fenced(RIGHT)])
    drafts = draft(tmp_path, chat, checks=[*CHECKS, wrong_check])
    assert list(drafts.suspect) == [1]
    assert drafts.met  # every check but the suspect one holds


def test_an_earlier_attempts_code_competes_and_wins_only_by_executing_better(
    tmp_path: Path,
) -> None:
    drafts = draft(tmp_path, model([fenced(WRONG)], [fenced(WRONG), fenced(WRONG)]))
    earlier = drafts.offer(RIGHT, origin="earlier", informed=True)
    assert drafts.best is earlier and earlier.path == tmp_path / "candidates" / "3"
    again = draft(tmp_path / "b", model([fenced(RIGHT)]))
    again.offer(WRONG, origin="earlier", informed=True)
    assert again.best is again.candidates[0]


def test_a_witness_the_time_limit_refuses_ends_the_cross_examination_not_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first witness is heard; the run's time limit passes while it is drafted, so the
    # second is refused before it is asked. Drafting returns what it proved and says why.
    now = [1000.0]
    monkeypatch.setattr(budgets, "wall_clock", lambda: now[0])
    queues = {"draft": [fenced(WRONG)], "witness": [fenced(ALSO_WRONG), fenced(RIGHT)]}

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        now[0] += 10.0  # each reply takes 10 s
        return queues[info.purpose].pop(0)

    chat = ScriptedChatModel(respond=respond)
    limit = RunBudget(started_at=1000.0, calls_until=1015.0, calls_until_why="5 x")
    with watching(limit):
        drafts = draft(tmp_path, chat)
    assert purposes(chat) == ["draft", "witness"]
    assert origins(drafts) == ["draft", "witness"] and not drafts.met
    assert drafts.best is drafts.candidates[0]
    assert drafts.cut == "time limit: 20.0s of 15.0s (5 x): 1 of 2 witnesses heard"
    assert drafts.suspect == {}  # one witness outvotes nothing
