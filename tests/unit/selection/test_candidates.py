"""Candidate zero's whole-task samples (`best_of`) and the floor, with a judge standing in.

The model is scripted on what each call is for (its metadata), never on the prompt; the judge
returns a report per code, so which answer is chosen follows from the reports alone.
"""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.checks.contract import CheckResult, CheckStatus, ContractReport
from atom_agent.models.purpose import CallInfo
from atom_agent.selection.candidates import Choice, Floor, Judge, PlainAnswer, best_of
from atom_agent.state import Check
from atom_agent.testing import ScriptedChatModel

TASK = "Write f(x) that returns x."
CHECKS = [
    Check(call="f(1)", expect="1", origin="task"),
    Check(call="f(2)", expect="2", origin="task"),
    Check(call="f(3)", expect="3", origin="planner"),
]


def report(*statuses: CheckStatus) -> ContractReport:
    return ContractReport([CheckResult(c, s) for c, s in zip(CHECKS, statuses, strict=True)])


P: CheckStatus = "passed"
F: CheckStatus = "failed"
REPORTS = {
    "plain": report(P, F, P),  # one of the task's checks, and the model's
    "worse": report(F, F, P),
    "equal": report(P, F, P),
    "better": report(P, P, F),
    "best": report(P, P, P),
}


def code(name: str) -> str:
    return f"def f(x):\n    return x  # {name}\n"


def samples(*names: str) -> ScriptedChatModel:
    """Answers each whole-task sample with the next named code; any other call fails."""
    queue = list(names)

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        assert (info.purpose, info.source) == ("task_sample", "PLAIN_TASK"), info
        name = queue.pop(0)
        return "no code today" if name == "none" else f"```python\n{code(name)}```"

    return ScriptedChatModel(respond=respond)


def judge(judged: list[str]) -> Judge:
    def run(source: str, folder: Path) -> ContractReport | None:
        name = source.rsplit("# ", 1)[1].strip()
        judged.append(name)
        return REPORTS[name]

    return run


def choose(model: ScriptedChatModel, tmp_path: Path, judged: list[str], temps: int = 4) -> Choice:
    first = PlainAnswer(source=code("plain"), reply=AIMessage(content=code("plain")))
    return best_of(
        model, TASK, ["f"], first, REPORTS["plain"], judge=judge(judged),
        temperatures=[0.4 + 0.1 * i for i in range(temps)], folder=tmp_path,
    )  # fmt: skip


def test_samples_no_better_than_the_plain_answer_never_replace_it(tmp_path: Path) -> None:
    judged: list[str] = []
    choice = choose(samples("worse", "equal", "none", "worse"), tmp_path, judged)
    assert choice.index == 0 and choice.source == code("plain")
    assert judged == ["worse", "equal", "worse"]  # a reply without code is not judged
    assert len(choice.replies) == 4


def test_a_better_sample_replaces_it_and_one_meeting_every_check_ends_the_sampling(
    tmp_path: Path,
) -> None:
    judged: list[str] = []
    model = samples("better", "worse", "best", "better")
    choice = choose(model, tmp_path, judged)
    assert choice.index == 3 and choice.source == code("best")
    assert judged == ["better", "worse", "best"] and len(model.calls) == 3


def test_a_plain_answer_meeting_the_tasks_checks_is_not_sampled_against(tmp_path: Path) -> None:
    model = samples()
    first = PlainAnswer(source=code("better"), reply=AIMessage(content=code("better")))
    choice = best_of(model, TASK, ["f"], first, REPORTS["better"], judge=judge([]),
                     temperatures=[0.4], folder=tmp_path)  # fmt: skip
    assert choice.index == 0 and model.calls == []


def test_the_floor_says_when_the_plain_answer_beats_the_package() -> None:
    floor = Floor(package=REPORTS["plain"], plain=REPORTS["better"])
    assert floor.plain_wins
    assert (
        floor.summary() == "the committed steps pass 1 of the task's 2 checks, the plain answer 2"
    )
    assert not Floor(package=REPORTS["better"], plain=REPORTS["equal"]).plain_wins
    assert not Floor(package=REPORTS["plain"], plain=REPORTS["equal"]).plain_wins  # a tie
    assert Floor(package=None, plain=REPORTS["worse"]).plain_wins  # nothing ran on the package
