"""HumanEval: problems from the package, the scorer in the sandbox, agent vs baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from tests.unit.graph.scripts import ExecutorScript, models, passing_attempt, step

from atom_agent import Context
from atom_agent.errors import InvalidInputError
from atom_agent.evals.humaneval import Problem, extract_code, load_problems, score
from atom_agent.evals.runner import run_humaneval
from atom_agent.memory import MemoryManager
from atom_agent.models.purpose import CallInfo
from atom_agent.sandbox import Limits, default_runner
from atom_agent.session import SessionContext
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel

RUNNER = default_runner()


def test_problems_come_from_the_package() -> None:
    problems = load_problems()
    assert len(problems) == 164
    assert problems[0].task_id == "HumanEval/0" and problems[0].entry_point
    assert [p.task_id for p in load_problems(["3", "HumanEval/7"])] == [
        "HumanEval/3",
        "HumanEval/7",
    ]
    assert len(load_problems(limit=5)) == 5
    with pytest.raises(InvalidInputError, match="unknown HumanEval ids"):
        load_problems(["999"])
    with pytest.raises(InvalidInputError, match="at least 1"):
        load_problems(limit=0)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_canonical_solution_passes(index: int) -> None:
    problem = load_problems([str(index)])[0]
    result = score(problem, problem.prompt + problem.canonical_solution, RUNNER)
    assert result.passed, result.detail


def test_a_wrong_solution_fails() -> None:
    problem = load_problems(["0"])[0]
    wrong = problem.prompt + "    return False\n"
    result = score(problem, wrong, RUNNER)
    assert not result.passed and "AssertionError" in result.detail


def test_an_infinite_loop_is_killed_at_the_timeout() -> None:
    problem = load_problems(["0"])[0]
    looping = problem.prompt + "    while True:\n        pass\n"
    result = score(problem, looping, RUNNER, Limits(timeout_s=2.0, cpu_s=5))
    assert not result.passed
    assert result.detail == "killed: timeout limit"  # the wall clock, before the 5 s CPU limit


def test_extract_code() -> None:
    problem = load_problems(["2"])[0]
    fenced = f"Sure:\n```python\ndef {problem.entry_point}(number):\n    return number % 1.0\n```"
    assert extract_code(fenced, problem).startswith(f"def {problem.entry_point}")
    body_only = "    return number % 1.0\n"
    assert extract_code(body_only, problem) == problem.prompt + body_only


def _problem_in(text: str, by_entry: dict[str, Problem]) -> tuple[str, Problem]:
    """The problem whose function the prompt holds (its own `def` line, not our wording)."""
    return next((name, p) for name, p in by_entry.items() if f"def {name}(" in text)


def test_agent_vs_baseline_on_two_problems(tmp_path: Path) -> None:
    problems = load_problems(["0", "2"])
    by_entry = {p.entry_point: p for p in problems}

    single_shots: list[str] = []
    plain_calls: list[str] = []

    def executor_reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        text = str(next(m for m in messages if isinstance(m, HumanMessage)).content)
        name, p = _problem_in(text, by_entry)
        if info.purpose == "plain":
            plain_calls.append(text)
        if info.purpose == "baseline":  # the baseline's single shot
            single_shots.append(text)
            body = "    return False\n" if p.task_id == "HumanEval/0" else p.canonical_solution
            return AIMessage(content=f"```python\n{p.prompt}{body}```")
        test = f"from impl import {name}\n\ndef test_runs():\n    assert {name} is not None\n"
        return ExecutorScript(
            {}, default=lambda: passing_attempt(p.prompt + p.canonical_solution, test)
        )(messages, info)

    roles = models([Plan(steps=[step("solve")])] * 2, ExecutorScript({}))
    roles["executor"] = ScriptedChatModel(respond=executor_reply)
    ctx = Context(workspace=str(tmp_path / "ws"))
    summary = run_humaneval(problems, ctx, tmp_path / "eval", models=roles, warm=False)
    assert summary["agent_pass@1"] == 1.0
    assert summary["single_shot_pass@1"] == 0.5
    assert summary["fixed_by_agent"] == ["HumanEval/0"] and summary["broken_by_agent"] == []
    assert summary["attempts_per_task"] == 1.0
    details = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert [r["agent_detail"] for r in details["problems"]] == ["check() passed"] * 2
    assert len((tmp_path / "eval" / "baseline.jsonl").read_text().splitlines()) == 2
    # The single shot is the agent's own first call: the same request, word for word.
    assert plain_calls and set(plain_calls) <= set(single_shots)
    # Problems are independent: what one run learned stays in that problem's memory project.
    with MemoryManager.from_context(ctx) as memory:

        def learned(project: str) -> list[str]:
            session = SessionContext(session_id="eval-test", project_id=project)
            return [r.content for r in memory.recall(session, min_confidence=0.0)]

        assert learned(ctx.project_id) == []
        for p in problems:
            (interface,) = learned(f"{ctx.project_id}.{p.slug}")
            assert f"def {p.entry_point}(" in interface
    # Run again (as after an interruption): nothing is asked or run twice, the figures hold.
    again = run_humaneval(problems, ctx, tmp_path / "eval", models=roles, warm=False)
    assert len(single_shots) == 2
    assert again["agent_pass@1"] == 1.0 and again["single_shot_pass@1"] == 0.5


def test_tasks_show_the_prompt_whole_and_its_examples_become_the_contract() -> None:
    from atom_agent.checks.extract import TASK_CRITERION
    from atom_agent.evals.humaneval import task_text
    from atom_agent.nodes.planner import finalize_plan, single_step_plan

    problem = load_problems(["0"])[0]
    text = task_text(problem)
    assert f"```python\n{problem.prompt}```" in text  # as one plain call of the model gets it
    (only,) = finalize_plan(single_step_plan(text), text).steps
    assert only.defines == ["has_close_elements"]
    assert [c.describe() for c in only.checks] == [
        "has_close_elements([1.0, 2.0, 3.0], 0.5) == False",
        "has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3) == True",
    ]
    assert TASK_CRITERION in only.acceptance_criteria


def test_the_warming_baseline_samples_warmer_until_the_visible_examples_pass(
    tmp_path: Path,
) -> None:
    from atom_agent.evals.humaneval import warming

    problem = load_problems(["2"])[0]  # truncate_number(3.5) == 0.5
    wrong = f"```python\n{problem.prompt}    return 0.0\n```"
    right = f"```python\n{problem.prompt}{problem.canonical_solution}```"
    model = ScriptedChatModel(responses=[wrong, wrong, right, wrong])
    warmed = warming(problem, model, RUNNER, Limits(timeout_s=20.0))
    assert warmed.samples == 3  # the third sample met the examples: the last one drawn
    assert [c.kwargs.get("temperature") for c in model.calls] == [0.0, 0.3, 0.6]
    assert score(problem, warmed.code, RUNNER).passed


def test_correct_code_rejected_by_a_wrong_own_test_is_counted_apart(tmp_path: Path) -> None:
    # /0: right code, but the model's own test expects the wrong value, so nothing is
    # committed. /2: wrong code with a test that agrees with it (committed, fails check()).
    problems = load_problems(["0", "2"])
    by_entry = {p.entry_point: p for p in problems}

    def executor_reply(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        text = str(next(m for m in messages if isinstance(m, HumanMessage)).content)
        if info.purpose != "tool_loop":
            return AIMessage(content="I cannot.")  # no plain answer, no witness: the loop only
        name, p = _problem_in(text, by_entry)
        if p.task_id == "HumanEval/0":
            impl = p.prompt + p.canonical_solution
            wrong = f"assert {name}([1.0, 1.05], 0.1) is False"  # they are closer than 0.1
            test = f"from impl import {name}\n\ndef test_close():\n    {wrong}\n"
        else:
            # Right on the prompt's example (3.5 -> 0.5), wrong on check()'s 1.33.
            impl = p.prompt + "    return round(number % 1.0, 1)\n"
            test = f"from impl import {name}\n\ndef test_half():\n    assert {name}(3.5) == 0.5\n"
        return ExecutorScript({}, default=lambda: passing_attempt(impl, test))(messages, info)

    roles = models([Plan(steps=[step("solve")])] * 2, ExecutorScript({}))
    roles["executor"] = ScriptedChatModel(respond=executor_reply)
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    summary = run_humaneval(
        problems, ctx, tmp_path / "eval", models=roles, baseline=False, warm=False
    )

    # /0: the second attempt starts from the code the first kept, which meets every example
    # the prompt states: it is the attempt, with the step's checks as its tests (the model's
    # wrong test never comes back), so the run is done. Nothing correct is rejected; the wrong
    # /2 is counted apart.
    assert summary["agent_pass@1"] == 0.5
    assert summary["rejected_correct"] == []
    assert summary["accepted_wrong"] == ["HumanEval/2"]
    rows = json.loads((tmp_path / "eval" / "eval.json").read_text())["problems"]
    assert [(r["agent_status"], r["attempts"], r["rejected_correct_attempts"]) for r in rows] == [
        ("done", 2, 0),
        ("done", 1, 0),
    ]


def test_the_extracted_contract_holds_for_the_reference_solutions() -> None:
    # The extractor must read the prompts' examples right: every runnable check it finds holds
    # for HumanEval's canonical solution, except where the prompt's own example is wrong
    # (/47: the median of its example is 8.0, not 15.0; /116: the example contradicts the
    # spec; /148: ("Venus") is a string, the function returns a tuple).
    import tempfile

    from atom_agent.checks.contract import run_contract
    from atom_agent.evals.humaneval import task_text
    from atom_agent.nodes.planner import finalize_plan, single_step_plan

    wrong_in_prompt = {"HumanEval/47", "HumanEval/116", "HumanEval/148"}
    contradicted: set[str] = set()
    ran = 0
    for problem in load_problems([str(i) for i in [*range(40), 47, 116, 148]]):
        text = task_text(problem)
        (only,) = finalize_plan(single_step_plan(text), text).steps
        if not only.checks:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "impl.py").write_text(problem.prompt + problem.canonical_solution)
            report = run_contract(
                only.checks, staging=Path(tmp), runner=RUNNER, limits=Limits(timeout_s=30.0),
                defines=only.defines,
            )  # fmt: skip
        ran += len(report.passed) + len(report.failed)
        if report.failed:
            contradicted.add(problem.task_id)
    assert contradicted == wrong_in_prompt
    assert ran > 80  # checks that ran (passed or not) over the 43 prompts


def test_a_run_that_committed_nothing_is_scored_on_the_plain_answer_it_hands_back(
    tmp_path: Path,
) -> None:
    from atom_agent.evals.runner import committed_source
    from atom_agent.workspace import Workspace
    from atom_agent.workspace.deliverable import PLAIN_MODULE, result_dir

    (problem,) = load_problems(["2"])
    ws = Workspace(tmp_path / "ws")
    run = ws.create_run("r1", task="t")
    assert committed_source(ws, "r1", problem) is None  # nothing handed back
    plain = problem.prompt + problem.canonical_solution
    result_dir(run).mkdir(parents=True, exist_ok=True)
    (result_dir(run) / f"{PLAIN_MODULE}.py").write_text(plain)
    assert committed_source(ws, "r1", problem) == plain  # what the user gets, unverified
    step = ws.create_step(run, "step1", title="s")
    step.artifacts.mkdir(parents=True, exist_ok=True)
    committed = plain + "\n# committed\n"
    (step.artifacts / "impl.py").write_text(committed)
    assert committed_source(ws, "r1", problem) == committed  # committed code comes first
    assert committed_source(ws, "missing", problem) is None
