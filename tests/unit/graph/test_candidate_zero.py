"""Candidate zero: one plain call for the whole task first, replaced only by better code.

Scripted models, the real sandbox and workspace. Each test pins one behaviour of the clause
issue's "the plain answer is candidate zero" and "select by execution".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.models.purpose import CallInfo
from atom_agent.sandbox import Limits, default_runner
from atom_agent.selection.pool import Candidate, Drafts
from atom_agent.selection.rank import rank
from atom_agent.state import Check, Plan
from atom_agent.testing import ScriptedChatModel
from atom_agent.workspace import Workspace, read_json

from .scripts import WHOLE_TASK, planner_model, step

SMALL_NAME = "qwen2.5-coder:1.5b"
TWO = (
    "Write add(a, b) that returns the sum and sub(a, b) that returns the difference, "
    "e.g. add(2, 3) == 5 and sub(5, 3) == 2. Include pytest tests."
)
BOTH = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN_SUB = BOTH.replace("return a - b", "return b - a")


def fenced(code: str) -> AIMessage:
    return AIMessage(content=f"```python\n{code}```\n")


def executor(plain: str, drafts: list[str]) -> ScriptedChatModel:
    """Answers every plain request with `plain`, draft requests with `drafts` in turn."""
    return plains_then_drafts([plain], drafts)


def roles(
    plain: str, drafts: list[str], plans: list[Plan] | None = None, contracts: Sequence[str] = ()
) -> dict[str, object]:
    return {
        "planner": planner_model(plans or [], contracts),
        "executor": executor(plain, drafts),
    }


def test_a_plain_answer_that_meets_every_stated_check_is_the_whole_run(tmp_path: Path) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2)
    models = roles(BOTH, [])
    outcome = run_task(TWO, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "done", outcome
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert (run.path / "plain" / "impl.py").read_text().strip() == BOTH.strip()
    (revision,) = read_json(run.plan_json)["revisions"]
    assert "the plain answer meets every check the task states" in revision["reason"]
    plan = revision["plan"]
    assert len(plan["steps"]) == 1  # no planner call: the plan is the task
    # One call in all: the plain answer; the draft is that answer, not a second call.
    assert len(models["executor"].calls) == 1  # type: ignore[attr-defined]
    assert all(
        c.info.purpose == "contract"
        for c in models["planner"].calls  # type: ignore[attr-defined]
    )
    artifacts = ws.step(run, "step1").artifacts
    assert (artifacts / "impl.py").read_text().strip() == BOTH.strip()
    info = ws.read_run(run)
    n = len(plan["clauses"])
    assert info["clauses"]["summary"].startswith(f"{n} clause{'s' if n != 1 else ''}: ")
    # Which rules of the table read each clause's checks: in run.json as in the plan.
    assert info["clauses"]["rules"] and info["clauses"]["rules"] == {
        c["id"]: c["rules"] for c in plan["clauses"] if c["rules"]
    }
    assert f"{n} clause{'s' if n != 1 else ''}:" in outcome.stop_reason
    assert "## Clauses of the task" in run.report_md.read_text()


def test_a_plain_answer_that_fails_a_stated_check_is_replaced_by_code_that_passes(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_plan_steps=1)
    # Candidate zero gets sub backwards; the task's own example sub(5, 3) == 2 fails on it.
    models = roles(BROKEN_SUB, [BOTH])
    outcome = run_task(TWO, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "done", outcome
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert (ws.step(run, "step1").artifacts / "impl.py").read_text().strip() == BOTH.strip()
    record = (ws.attempt(ws.step(run, "step1"), 1).path / "drafts.json").read_text()
    assert '"k": 0' in record and '"kept": 1' in record  # zero was first, and lost


def _report(source: str, checks: list[Check], tmp_path: Path, name: str) -> ContractReport:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "impl.py").write_text(source)
    return run_contract(checks, staging=folder, runner=default_runner(), limits=Limits())


def test_one_check_the_task_states_outranks_any_number_of_the_models(tmp_path: Path) -> None:
    task = Check(call="sub(5, 3)", expect="2", origin="task")
    model = [Check(call=f"sub({i}, 0)", expect=str(-i), origin="planner") for i in range(1, 4)]
    checks = [task, *model]
    right = _report(BOTH, checks, tmp_path, "right")  # passes the task's check only
    wrong = _report(BROKEN_SUB, checks, tmp_path, "wrong")  # passes the model's three only
    # (honest, task, kept, passed, own): no gaming, no own tests here.
    assert rank(right) == (1, 1, 0, 1, 0) and rank(wrong) == (1, 0, 0, 3, 0)
    drafts = Drafts(
        candidates=[
            Candidate(k=0, source=BROKEN_SUB, temperature=0.0, informed=False, report=wrong),
            Candidate(k=1, source=BOTH, temperature=0.4, informed=True, report=right),
        ]
    )
    assert drafts.best is not None and drafts.best.k == 1
    assert right.task_checks_hold() and not wrong.task_checks_hold()


def test_a_retry_keeps_the_earlier_attempts_code_when_its_drafts_execute_worse(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    # Attempt 1: candidate zero passes the task's example but not the model's contract check;
    # attempt 2's drafts pass neither. The step's best code so far stays staged.
    wrong_model_check = (
        "from impl import add\n\ndef test_add():\n    assert add(1, 1) == 3\n"
        "    assert add(2, 2) == 4\n"
    )
    plan_model = planner_model([], [wrong_model_check])
    worse = "def add(a, b):\n    return 0\n"
    models = {
        "planner": plan_model,
        "executor": executor("def add(a, b):\n    return a + b\n", [worse]),
    }
    task = "Write add(a, b) that returns the sum of a and b."
    outcome = run_task(task, ctx, models=models)  # type: ignore[arg-type]

    ws = Workspace(ctx.workspace)
    step = ws.step(ws.run(outcome.run_id), "step1")
    staged = ws.attempt(step, 2).staging / "impl.py"
    assert staged.read_text().strip() == "def add(a, b):\n    return a + b"
    record = (ws.attempt(step, 2).path / "drafts.json").read_text()
    assert '"temperature": -1.0' in record  # the earlier attempt's code competed, and won


def test_a_run_that_commits_nothing_hands_back_the_plain_answer_labelled_unverified(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0)
    # The user's own example is wrong for every candidate: nothing can be committed.
    task = "Write add(a, b).\n\n>>> add(1, 1)\n3\n"
    models = roles(BOTH, [BOTH])
    outcome = run_task(task, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "failed"
    assert "result/ holds the model's plain answer, unverified" in outcome.stop_reason
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    result = run.path / "result"
    assert (result / "plain_answer.py").read_text().strip() == BOTH.strip()
    assert "Unverified" in (result / "README.md").read_text()
    assert "## Result (unverified)" in run.report_md.read_text()
    assert ws.read_run(run)["deliverable"]["unverified"] is True


def plains_then_drafts(plains: list[str], drafts: list[str]) -> ScriptedChatModel:
    """Answers plain requests with `plains` in turn (the last repeats), drafts with `drafts`."""
    plain_queue, draft_queue = list(plains), list(drafts)

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        queue = plain_queue if info.purpose in WHOLE_TASK else draft_queue
        assert queue, f"an unexpected request: {info}"
        return fenced(queue.pop(0) if len(queue) > 1 else queue[0])

    return ScriptedChatModel(respond=respond, model_name=SMALL_NAME)


def test_a_sampled_answer_that_meets_the_stated_checks_replaces_a_failing_plain_one(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2)
    models = roles("", [])
    models["executor"] = plains_then_drafts([BROKEN_SUB, BOTH], [])
    outcome = run_task(TWO, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "done", outcome
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    # The plain answer failed sub(5, 3) == 2; the first warm sample met every stated check,
    # so it is candidate zero, the task is one step, and no draft or planner call follows.
    assert (run.path / "plain" / "impl.py").read_text().strip() == BOTH.strip()
    choice = json.loads((run.path / "plain" / "samples" / "choice.json").read_text())
    assert (choice["samples"], choice["chosen"]) == (1, 1)
    (revision,) = read_json(run.plan_json)["revisions"]
    assert "the plain answer meets every check the task states" in revision["reason"]
    calls = models["executor"].calls  # type: ignore[attr-defined]
    assert len(calls) == 2
    assert (ws.step(run, "step1").artifacts / "impl.py").read_text().strip() == BOTH.strip()
    assert outcome.usage["model_calls"] >= 2


def test_samples_that_execute_no_better_leave_the_plain_answer(tmp_path: Path) -> None:
    from atom_agent.selection.candidates import PlainAnswer, best_of

    checks = [
        Check(call="add(2, 3)", expect="5", origin="task"),
        Check(call="sub(5, 3)", expect="2", origin="task"),
    ]
    worse = BOTH.replace("return a + b", "return a * b").replace("return a - b", "return 0")
    model = plains_then_drafts([worse, BROKEN_SUB], [])

    def judge(source: str, where: Path) -> ContractReport:
        where.mkdir(parents=True, exist_ok=True)
        (where / "impl.py").write_text(source)
        return run_contract(checks, staging=where, runner=default_runner(), limits=Limits())

    first = PlainAnswer(source=BROKEN_SUB, reply=fenced(BROKEN_SUB))
    choice = best_of(
        model, TWO, ["add", "sub"], first, judge(BROKEN_SUB, tmp_path / "zero"),
        judge=judge, temperatures=(0.4, 0.8), folder=tmp_path / "samples",
    )  # fmt: skip
    assert choice.index == 0 and choice.source == BROKEN_SUB
    assert len(choice.replies) == 2  # both samples were drawn, and both lost


def test_no_sample_is_drawn_when_the_plain_answer_meets_the_stated_checks(tmp_path: Path) -> None:
    from atom_agent.selection.candidates import PlainAnswer, best_of

    checks = [Check(call="sub(5, 3)", expect="2", origin="task")]
    model = plains_then_drafts([BROKEN_SUB], [])
    folder = tmp_path / "zero"
    folder.mkdir()
    (folder / "impl.py").write_text(BOTH)
    report = run_contract(checks, staging=folder, runner=default_runner(), limits=Limits())
    first = PlainAnswer(source=BOTH, reply=fenced(BOTH))
    choice = best_of(
        model, TWO, ["add", "sub"], first, report,
        judge=lambda s, w: None, temperatures=(0.4, 0.8), folder=tmp_path / "samples",
    )  # fmt: skip
    assert choice.index == 0 and choice.replies == [] and model.calls == []


TALLY = (
    "Write a Tally class; Tally() takes no arguments. add(word: str) -> int counts one more "
    "of word and returns its count so far. top() -> str returns the word counted most often, "
    "the earliest added among equals. Include pytest tests."
)
TALLY_CODE = (
    "class Tally:\n"
    "    def __init__(self):\n"
    "        self.counts = {}\n\n"
    "    def add(self, word: str) -> int:\n"
    "        self.counts[word] = self.counts.get(word, 0) + 1\n"
    "        return self.counts[word]\n\n"
    "    def top(self) -> str:\n"
    "        return max(self.counts, key=self.counts.get)\n"
)
LEAST = TALLY_CODE.replace("max(", "min(")


def test_a_class_contract_completes_a_test_per_clause_and_catches_a_wrong_plain_answer(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    completed = (
        "import pytest\nfrom impl import Tally\n\n"
        "def test_c3():\n"
        '    """add(word: str) -> int counts one more of word and returns its count so far."""\n'
        "    t = Tally()\n"
        "    t.add('a')\n"
        "    assert t.add('a') == 2\n\n"
        "def test_c4():\n"
        '    """top() -> str returns the word counted most often, the earliest added among."""\n'
        "    t = Tally()\n"
        "    t.add('a')\n"
        "    t.add('b')\n"
        "    t.add('b')\n"
        "    assert t.top() == 'b'\n"
    )
    models = roles(LEAST, [TALLY_CODE], contracts=[completed])
    outcome = run_task(TALLY, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "done", outcome
    (contract,) = [
        str(c.messages[-1].content)
        for c in models["planner"].calls  # type: ignore[attr-defined]
        if c.info.purpose == "contract"
    ]
    # Asked for a list of tests naming their clauses; a reply that is a test file whose tests
    # are named after the clauses is read all the same.
    assert "write the tests for Tally" in contract and "- c4: top() -> str returns" in contract
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    plan = read_json(run.plan_json)["revisions"][-1]["plan"]
    scenario = next(c for c in plan["steps"][0]["checks"] if c["call"].endswith("t.top()"))
    assert scenario["clause"] == "c4" and scenario["expect"] == "'b'"
    # The plain answer's top() gives the least counted word: the clause's test fails it, and
    # the drafted code that meets it is committed.
    artifacts = ws.step(run, "step1").artifacts
    assert "max(" in (artifacts / "impl.py").read_text()
    clauses = ws.read_run(run)["clauses"]
    assert "c4" in clauses["verified"], clauses


def test_the_agents_calls_for_code_may_end_where_their_tests_begin(tmp_path: Path) -> None:
    from atom_agent.models.stopping import expecting_now, names_now

    # Every request for code says what it must define, so the embedded model can end the
    # reply where tests begin after that code (models/stopping.py); the agent's plain call
    # and its whole-task samples ask for a module, the drafts for code alone.
    seen: list[tuple[bool, str, tuple[str, ...]]] = []
    inner = plains_then_drafts([BROKEN_SUB], [BROKEN_SUB, BOTH])

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        seen.append((info.purpose in WHOLE_TASK, expecting_now(), names_now()))
        return inner.invoke(messages)  # type: ignore[return-value]

    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_plan_steps=1)
    models = roles("", [])
    models["executor"] = ScriptedChatModel(respond=respond, model_name=SMALL_NAME)
    run_task(TWO, ctx, models=models)  # type: ignore[arg-type]

    plain = [(mode, names) for is_plain, mode, names in seen if is_plain]
    drafts = [(mode, names) for is_plain, mode, names in seen if not is_plain]
    assert len(plain) >= 2 and set(plain) == {("module", ("add", "sub"))}  # answer + samples
    assert drafts and all(mode == "code" and names for mode, names in drafts)
    assert all(set(names) <= {"add", "sub"} for _, names in drafts)


def test_the_whole_task_samples_are_the_attempts_witnesses_and_no_fresh_one_is_drawn(
    tmp_path: Path,
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    adds = BOTH.replace("return a - b", "return a + b")
    zero = BOTH.replace("return a - b", "return 0")
    plan = Plan(steps=[step("step1", criteria=["add and sub"], defines=["add", "sub"])])
    models = roles("", [], plans=[plan])
    # The plain answer and both samples fail sub(5, 3) == 2, each its own way; the next
    # attempt's fresh draft is right.
    models["executor"] = plains_then_drafts([BROKEN_SUB, adds, zero], [BOTH])
    outcome = run_task(TWO, ctx, models=models)  # type: ignore[arg-type]

    assert outcome.status == "done", outcome
    calls = models["executor"].calls  # type: ignore[attr-defined]
    assert [(c.info.purpose, c.info.attempt) for c in calls] == [
        ("plain", 0),
        ("task_sample", 0),
        ("task_sample", 0),
        ("draft", 2),
    ]
    ws = Workspace(ctx.workspace)
    step_ref = ws.step(ws.run(outcome.run_id), "step1")
    record = json.loads((ws.attempt(step_ref, 1).path / "drafts.json").read_text())
    assert [(c["origin"], c["passed"]) for c in record["candidates"]] == [
        ("plain", False),
        ("task_sample", False),
        ("task_sample", False),
    ]
    assert (step_ref.artifacts / "impl.py").read_text().strip() == BOTH.strip()
