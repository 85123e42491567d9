"""Verification by execution: contracts, drafts, warming, cross-examination, honest labels.

Scripted models, the real sandbox, workspace and memory. Each test pins one mechanism of the
verification issue and fails without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from atom_agent import Context, Resources, build_graph, run_task
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes.planner import finalize_plan, single_step_plan
from atom_agent.nodes.reflector import node as reflector_node
from atom_agent.state import Check, Plan, PlanStep, plan_problems
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.verification.contracts import contract_prompt, unchecked, write_contracts
from atom_agent.workspace import Workspace

from .scripts import (
    ExecutorScript,
    models,
    passing_attempt,
    planner_model,
    step,
)

RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
SMALL_NAME = "qwen2.5-coder:1.5b"  # as Ollama or an OpenAI-compatible server names it


def fenced(code: str) -> AIMessage:
    return AIMessage(content=f"Here it is:\n```python\n{code}```\n")


CODE_CALLS = ("plain", "task_sample", "draft", "witness")
"""Calls for code in one block: the plain answer, a draft, retry or repair, a witness."""


def drafter(
    codes: list[str], *, then: Callable[[list[BaseMessage], CallInfo], AIMessage] | None = None
) -> Callable[[list[BaseMessage], CallInfo], AIMessage]:
    """Draft calls get `codes` in turn (the last one repeats); the rest go to `then`."""
    queue = list(codes)

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose in CODE_CALLS:
            return fenced(queue.pop(0) if len(queue) > 1 else queue[0])
        assert then is not None, "the tool loop was not expected"
        return then(messages, info)

    return respond


def add_step(checks: list[Check], criteria: list[str] | None = None) -> PlanStep:
    return PlanStep(
        id="adder",
        title="add two numbers",
        description="Implement add(a, b).",
        acceptance_criteria=criteria or ["add(2, 3) == 5"],
        defines=["add"],
        checks=checks,
    )


def small_roles(plan: Plan, codes: list[str]) -> dict[str, ScriptedChatModel]:
    return {
        "planner": planner_model([plan]),
        "executor": ScriptedChatModel(respond=drafter(codes), model_name=SMALL_NAME),
    }


def verdict_of(ctx: Context, run_id: str, step_id: str = "adder", n: int = 1) -> dict[str, Any]:
    ws = Workspace(ctx.workspace)
    return ws.read_verdict(ws.attempt(ws.step(ws.run(run_id), step_id), n))


GOOD = Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5")


def test_a_small_model_behind_any_chat_model_drafts_first_and_commits_a_passing_draft(
    ctx: Context,
) -> None:
    roles = small_roles(Plan(steps=[add_step([GOOD])]), [RIGHT])
    outcome = run_task("Write the adder.", ctx, models=roles)

    assert outcome.status == "done", outcome
    (call,) = roles["executor"].calls  # one draft, no tool loop
    assert call.tool_names == [] and "in one ```python block" in str(call.messages[0].content)
    ws = Workspace(ctx.workspace)
    artifacts = ws.step(ws.run(outcome.run_id), "adder").artifacts
    assert (artifacts / "impl.py").read_text() == RIGHT
    assert "def test_check_1" in (artifacts / "test.py").read_text()  # the contract, as pytest
    verdict = verdict_of(ctx, outcome.run_id)
    assert verdict["contract"]["summary"] == "1 passed, 0 failed"
    assert [(c["criterion"], c["status"]) for c in verdict["criteria"]] == [
        ("add(2, 3) == 5", "verified")
    ]
    assert "add(2, 3) == 5 → passed" in verdict["criteria"][0]["evidence"][0]
    assert outcome.usage["model_calls"] == 2  # the planner and one draft


@pytest.mark.parametrize(("candidate_zero", "purposes"), [(True, ["plain"]), (False, ["draft"])])
def test_a_small_model_drafts_a_step_no_check_can_run_and_never_runs_the_tool_loop(
    tmp_path: Path, candidate_zero: bool, purposes: list[str]
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0,
                  candidate_zero=candidate_zero)  # fmt: skip
    # No check: the first draft with code (candidate zero, when asked) is the attempt.
    roles = small_roles(Plan(steps=[add_step([])]), [RIGHT, WRONG])
    outcome = run_task("Write the adder.", ctx, models=roles)

    assert [c.info.purpose for c in roles["executor"].calls] == purposes  # no tool_loop call
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "adder"), 1)
    assert (attempt.staging / "impl.py").read_text() == RIGHT
    assert ws.read_history(attempt)  # the drafting is the attempt's record
    # The reflector proves what it can: nothing executed the criterion.
    verdict = verdict_of(ctx, outcome.run_id)
    assert [(c["criterion"], c["status"]) for c in verdict["criteria"]] == [
        ("add(2, 3) == 5", "unverified")
    ]
    assert "criterion not verified (no check ran): add(2, 3) == 5" in verdict["feedback"]


def test_a_failing_draft_is_cross_examined_and_the_next_attempt_is_told_the_evidence(
    ctx: Context,
) -> None:
    times = "def add(a, b):\n    return a * b\n"
    # The draft is wrong; two independent witnesses disagree with it and with each other, so
    # the check stands and the attempt fails. Nothing asks the model to repair its own code:
    # the next attempt drafts afresh, warmer, told which check failed and what the code gave.
    roles = small_roles(Plan(steps=[add_step([GOOD])]), [WRONG, times, WRONG, RIGHT])
    outcome = run_task("Write the adder.", ctx, models=roles)

    assert outcome.status == "done"
    calls = roles["executor"].calls
    # The second witness wrote the draft's very code (a voter, not a witness); the reflector
    # draws no fresh sample of its own.
    assert [c.kwargs.get("temperature") for c in calls] == [0.0, 0.8, 0.8, 0.2]
    assert [c.info.purpose for c in calls] == ["draft", *["witness"] * 2, "draft"]
    assert [c.info.attempt for c in calls] == [1, 1, 1, 2]
    told = str(calls[3].messages[-1].content)
    assert "add(2, 3) == 5: expected 5, got -1" in told
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert (ws.step(run, "adder").artifacts / "impl.py").read_text() == RIGHT
    record = json.loads((ws.attempt(ws.step(run, "adder"), 1).path / "drafts.json").read_text())
    assert [(c["passed"], c["informed"], c["origin"]) for c in record["candidates"]] == [
        (False, False, "draft"),
        (False, False, "witness"),
        (False, False, "witness"),
    ]
    assert record["suspect"] == {}


def test_a_wrong_planner_check_contradicted_by_independent_samples_is_suspect(
    ctx: Context,
) -> None:
    wrong = Check(call="add(1, 1)", expect="3", criterion="small numbers add up")
    plan = Plan(steps=[add_step([GOOD, wrong], ["add(2, 3) == 5", "small numbers add up"])])
    # The draft fails the wrong check; two witnesses write other code that gives 2 as well.
    roles = small_roles(
        plan,
        [RIGHT, "def add(a, b):\n    return b + a\n", "def add(a, b):\n    return sum((a, b))\n"],
    )
    outcome = run_task("Write the adder.", ctx, models=roles)

    assert outcome.status == "done", outcome
    verdict = verdict_of(ctx, outcome.run_id)
    cross = verdict["cross_examination"]
    assert cross["witnesses"] == 2
    assert [s["check"] for s in cross["suspect_checks"]] == ["add(1, 1) == 3"]
    statuses = {c["criterion"]: c["status"] for c in verdict["criteria"]}
    assert statuses == {"add(2, 3) == 5": "verified", "small numbers add up": "suspect"}
    report = Workspace(ctx.workspace).run(outcome.run_id).report_md.read_text()
    assert "suspect check: `add(1, 1) == 3`" in report and "1 verified, 1 suspect" in report


def test_a_check_the_task_states_is_never_suspect(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0)
    plan = Plan(steps=[add_step([])])
    roles = small_roles(plan, [RIGHT])
    # The user's own example (wrong, but theirs) is extracted by code and binds the step;
    # a task naming one function is planned by code as one step, with no model call.
    outcome = run_task("Write add(a, b).\n\n>>> add(1, 1)\n3\n", ctx, models=roles)

    assert outcome.status == "failed"
    verdict = verdict_of(ctx, outcome.run_id, "step1")
    assert verdict["cross_examination"]["suspect_checks"] == []
    assert "check failed: add(1, 1) == 3: expected 3, got 2" in verdict["feedback"]


def test_a_criterion_no_check_backs_is_unverified_and_no_model_is_asked_about_it(
    ctx: Context,
) -> None:
    two = step("adder", criteria=["add(2, 3) == 5", "handles negative numbers"], defines=["add"])
    two = two.model_copy(update={"checks": [GOOD]})
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    roles = models([Plan(steps=[two])], executor)
    outcome = run_task("add", ctx, models=roles)

    assert outcome.status == "done"
    # The plan and the attempt's three loop turns: no call asks a model whether the criterion
    # no check backs holds.
    assert [c.info.purpose for c in roles["planner"].calls] == ["plan"]
    assert [c.info.purpose for c in roles["executor"].calls] == ["tool_loop"] * 3
    verdict = verdict_of(ctx, outcome.run_id)
    statuses = {c["criterion"]: c["status"] for c in verdict["criteria"]}
    assert statuses == {"add(2, 3) == 5": "verified", "handles negative numbers": "unverified"}
    assert "criterion not verified (no check ran): handles negative numbers" in verdict["feedback"]
    report = Workspace(ctx.workspace).run(outcome.run_id).report_md.read_text()
    assert "**unverified** — handles negative numbers" in report
    assert "1 verified, 1 unverified" in report
    assert "judged" not in report


def test_plan_validation_rejects_test_only_steps_and_silent_redefinitions() -> None:
    code = step("code", defines=["add"])
    tests_only = step("tests", depends_on=["code"], defines=[])
    assert any(
        "defines no public function or class" in p
        for p in plan_problems(Plan(steps=[code, tests_only]))
    )
    again = step("again", depends_on=["code"], defines=["add"])
    assert any(
        "adds no new public behaviour" in p for p in plan_problems(Plan(steps=[code, again]))
    )
    silent = step("silent", defines=["add", "sub"])
    assert any(
        "redefines add of step 'code': it must depend on 'code'" in p
        for p in plan_problems(Plan(steps=[code, silent]))
    )
    built_on = step("built", depends_on=["code"], defines=["add", "sub"])
    assert plan_problems(Plan(steps=[code, built_on])) == []


def test_a_task_that_names_one_function_is_one_step_with_its_examples() -> None:
    task = "Write is_palindrome(s) that ignores case. is_palindrome('Aba') == True."
    proposed = Plan(
        steps=[
            step("core", defines=["is_palindrome"]),
            step("more", depends_on=["core"], defines=["is_palindrome", "helper"]),
            step("tests", depends_on=["more"], defines=[]),
        ]
    )
    plan = finalize_plan(proposed, task)
    (only,) = plan.steps
    assert set(only.defines) == {"is_palindrome", "helper"}
    # The stated signature is checked by code too (inspect, no model), before the example.
    assert [c.describe() for c in only.checks][1:] == ["is_palindrome('Aba') == True"]
    assert "inspect.signature(is_palindrome)" in only.checks[0].call
    assert {c.origin for c in only.checks} == {"task"}
    assert "the examples stated in the task hold" in only.acceptance_criteria
    assert [c.kind for c in plan.clauses] == ["signature", "example"]


def test_a_one_function_task_gets_its_contract_from_test_code_the_planner_wrote(
    ctx: Context,
) -> None:
    contract = (
        "import pytest\n\ndef add(a, b):\n    return a + b  # models often write the code too\n\n"
        '@pytest.mark.parametrize("a, b, want", [(2, 3, 5), (-1, 1, 0)])\n'
        "def test_add(a, b, want):\n    assert add(a, b) == want\n"
    )
    roles = small_roles(Plan(steps=[]), [RIGHT])
    roles["planner"] = planner_model([], contracts=[contract])
    outcome = run_task("Write a function add(a, b) that adds two numbers.", ctx, models=roles)

    assert outcome.status == "done", outcome
    (contract_call,) = roles["planner"].calls  # no plan asked for: one function is one step
    # Asked for a bounded list of tests; a reply in text (a test file) is read all the same.
    assert contract_call.tool_names == ["Tests"]
    verdict = verdict_of(ctx, outcome.run_id, "step1")
    assert verdict["contract"]["summary"] == "3 passed, 0 failed"  # the signature, and two
    assert {c["status"] for c in verdict["criteria"]} == {"verified"}


def test_a_replan_reopens_the_committed_step_the_evidence_implicates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=1)
    no_det = "class Matrix:\n    def __init__(self, rows):\n        self.rows = rows\n"
    with_det = no_det + "\n    def det(self):\n        return self.rows[0][0]\n"
    core_test = "from impl import Matrix\n\n\ndef test_rows():\n    assert Matrix([[1]]).rows\n"
    use_impl = "from deps.core.impl import Matrix\n\n\ndef double_det(m):\n    return 2 * m.det()\n"
    use_test = (
        "from impl import double_det\n\n\ndef test_callable():\n    assert callable(double_det)\n"
    )
    core = step("core", defines=["Matrix"])
    use = step("use", depends_on=["core"], defines=["double_det"]).model_copy(
        update={"checks": [Check(call="double_det(Matrix([[2]]))", expect="4")]}
    )
    script = ExecutorScript(
        {
            ("core", 1): passing_attempt(no_det, core_test),
            ("use", 1): passing_attempt(use_impl, use_test),
            ("core", 2): passing_attempt(with_det, core_test),
            ("use", 2): passing_attempt(use_impl, use_test),
        }
    )
    roles = models([Plan(steps=[core, use]), Plan(steps=[core, use])], script)
    roles["executor"] = ScriptedChatModel(respond=drafter(["no code here"], then=script))
    task = "Write a Matrix class. Then write a function double_det(m) that uses Matrix."
    outcome = run_task(task, ctx, models=roles)

    assert outcome.status == "done", outcome
    planning = [c for c in roles["planner"].calls if c.info.purpose == "plan"]
    replan = str(planning[1].messages[-1].content)
    assert "The evidence implicates committed step 'core'" in replan
    assert "no attribute 'det'" in replan
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert (ws.step(run, "core").artifacts / "impl.py").read_text() == with_det
    assert ws.read_step(ws.step(run, "core"))["committed_attempt"] == 2


def test_a_defined_name_no_check_or_test_ran_is_labelled_in_verdict_report_and_outcome(
    ctx: Context,
) -> None:
    # Two functions, one contract check of add, an error check of sub, tests of add only: the
    # step commits (the commit rule is unchanged), but nothing executed checked what sub or
    # neg return, and the run says so instead of reading "verified".
    impl = RIGHT + "\n\ndef sub(a, b):\n    return a + b\n\n\ndef neg(a):\n    return a\n"
    raises = Check(call="sub('a', 1)", raises="TypeError", criterion="sub rejects text")
    three = step("adder", criteria=["add(2, 3) == 5", "sub rejects text"])
    three = three.model_copy(update={"checks": [GOOD, raises], "defines": ["add", "sub", "neg"]})
    executor = ExecutorScript({("adder", 1): passing_attempt(impl=impl)})
    outcome = run_task("add, sub, neg", ctx, models=models([Plan(steps=[three])], executor))

    assert outcome.status == "done"
    uses = {u["name"]: u["status"] for u in verdict_of(ctx, outcome.run_id)["names"]}
    assert uses == {"add": "exercised", "sub": "errors only", "neg": "unexercised"}
    assert "no result checked for sub (errors only), neg (unexercised)" in outcome.stop_reason
    report = Workspace(ctx.workspace).run(outcome.run_id).report_md.read_text()
    assert "**unexercised** — `neg`" in report and "**errors only** — `sub`" in report


def test_a_step_whose_checks_show_no_result_of_a_name_gets_a_contract_beside_them() -> None:
    # The task's checks of this step are an error case of decode and a value check of encode:
    # what decode computes is checked by nothing, so the planner model is asked for a contract.
    errors_only = step("codec", defines=["encode", "decode"]).model_copy(
        update={
            "checks": [
                Check(call="decode('3')", raises="ValueError", origin="task"),
                Check(call="encode('aab')", expect="'2a1b'", origin="task"),
            ]
        }
    )
    covered = step("pair", defines=["swap"]).model_copy(
        update={"checks": [Check(call="swap((1, 2))", expect="(2, 1)", origin="task")]}
    )
    contract = (
        "def test_codec():\n"
        "    assert decode('2a1b') == 'aab'\n"
        "    assert encode('aab') == '2a1b'\n"  # the task's own check: not added twice
    )
    model = planner_model([], contracts=[contract])
    plan, replies = write_contracts(model, "a codec and a swap", Plan(steps=[errors_only, covered]))

    assert len(model.calls) == len(replies) == 1  # the covered step got no contract call
    assert "encode, decode" in str(model.calls[0].messages[-1].content)
    codec, pair = plan.steps
    assert [c.describe() for c in codec.checks] == [
        "decode('3') raises ValueError",
        "encode('aab') == '2a1b'",
        "decode('2a1b') == 'aab'",
    ]
    assert [c.origin for c in codec.checks] == ["task", "task", "planner"]
    assert pair.checks == covered.checks
    assert unchecked(["encode", "decode"], errors_only.checks) == ["decode"]
    assert unchecked(["swap"], covered.checks) == []


class _Crash(Exception):
    """A crash injected into the reflector."""


@pytest.mark.parametrize("crash", [False, True])
def test_the_reflector_takes_the_attempts_candidates_from_the_state_not_from_drafts_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: bool
) -> None:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0,
                  candidate_zero=False)  # fmt: skip
    times = "def add(a, b):\n    return a * b\n"
    more = "def add(a, b):\n    return a + b + 1\n"
    # Every candidate fails: the draft, two independent witnesses, the warmed retries.
    roles = small_roles(Plan(steps=[add_step([GOOD])]), [WRONG, times, more, WRONG])
    executor = roles["executor"]
    if crash:  # the reflector dies once after the executor's checkpoint; the run is resumed
        execute = reflector_node.execute
        calls: list[int] = []

        def crashing(*args: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:
                raise _Crash
            return execute(*args)

        monkeypatch.setattr(reflector_node, "execute", crashing)
    with Resources(ctx, models=roles) as res:
        graph = build_graph(res, checkpointer=InMemorySaver())
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        drafted = -1
        try:
            for update in graph.stream({"task": "Write the adder."}, config, stream_mode="updates"):
                if "executor" in update:
                    drafted = len(executor.calls)
                    ws = Workspace(ctx.workspace)
                    run = ws.run(graph.get_state(config).values["run_id"])
                    (ws.attempt(ws.step(run, "adder"), 1).path / "drafts.json").unlink()
        except _Crash:
            assert crash and graph.get_state(config).next == ("reflector",)
            graph.invoke(None, config)
        state = graph.get_state(config).values
    summary = state["drafts"]
    assert json.loads(json.dumps(summary)) == summary  # plain data, checkpointed with the state
    assert (summary["step_id"], summary["attempt"], summary["kept"]) == ("adder", 1, 0)
    assert [(c["k"], c["informed"], c["passed"]) for c in summary["candidates"]][:3] == [
        (0, False, False),
        (1, False, False),
        (2, False, False),
    ]
    verdict = verdict_of(ctx, state["run_id"])
    assert verdict["cross_examination"]["witnesses"] == 2
    # The witnesses were the attempt's own drafts, read through the state: the reflector
    # sampled none (drafts.json was gone before it ran).
    assert drafted > 0 and len(executor.calls) == drafted


def test_a_class_or_a_stated_result_without_a_check_gets_a_contract() -> None:
    from atom_agent.nodes.planner import task_names
    from atom_agent.verification.contracts import open_clauses, quotes_a_result, wants_contract

    table = (
        "Write a Table class; Table(headers: list[str]) takes the column names. "
        "A table without rows renders only its header line and dash line. "
        "Example: with headers ['name', 'qty'] and the rows ('apple', 3) and ('kiwi', 12), "
        "render() returns 'name  | qty\\n------+----\\napple |   3\\nkiwi  |  12'."
    )
    plan = finalize_plan(single_step_plan(table), table)
    (only,) = plan.steps
    # Even with every name checked, a class whose prose no check covers gets a contract.
    assert wants_contract(plan, only, [])
    opened = open_clauses(plan, only)
    assert opened and quotes_a_result(opened[0].text)  # the worked example first

    # The class's contract is a list of one-line tests, each naming the open clause it checks
    # (listed with their ids, the worked example first).
    tests = [
        {"clause": "c4", "test": "t = Table(['name', 'qty']); t.add_row('apple', 3); "
         "t.add_row('kiwi', 12); "
         "assert t.render() == 'name  | qty\\n------+----\\napple |   3\\nkiwi  |  12'"},
        {"clause": "c3", "test": "t = Table(['a']); assert t.render() == 'a\\n-'"},
        {"clause": "c3", "test": "t = Table(['a']); assert t.render().count('\\n') == 1"},
        # a third test of one clause: over the cap
        {"clause": "c3", "test": "t = Table(['a']); assert len(t.render()) == 3"},
    ]  # fmt: skip
    model = ScriptedChatModel(responses=[tool_call("Tests", {"tests": tests})])
    plan, replies = write_contracts(model, table, plan)
    assert len(replies) == 1
    prompt = str(model.calls[0].messages[-1].content)
    assert prompt.index("- c4: Example:") < prompt.index(
        "- c3: A table without rows renders only its header line and dash line."
    )
    enum = model.calls[0].tools[0]["function"]["parameters"]["properties"]["tests"]["items"]
    assert enum["properties"]["clause"]["enum"] == [c.id for c in opened]  # the example first
    (scenario,) = [c for c in plan.steps[0].checks if "add_row" in c.call]
    assert scenario.origin == "task"  # it restates the task's example: never suspect
    assert scenario.clause == "c4"
    empty = [c for c in plan.steps[0].checks if c.call.startswith("t = Table(['a'])")]
    # Each test's checks execute its clause; at most two per clause are kept.
    assert [c.clause for c in empty] == ["c3", "c3"]
    assert plan.steps[0].checks[-1].call.splitlines()[-1] == "t.render().count('\\n')"
    assert task_names(table) == ["Table"]

    # One function, prose with no stated result and every name checked: no call.
    slug = (
        "Write slugify(text: str) -> str that lowercases, e.g. slugify('A b') == 'a-b'. It trims."
    )
    plan = finalize_plan(single_step_plan(slug), slug)
    (only,) = plan.steps
    assert not wants_contract(plan, only, unchecked(only.defines, only.checks))
    # One worked example checks the name, but a sentence stating what the function does has
    # no check of its own: the test file to complete, with that sentence.
    slug = (
        "Write slugify(text: str) -> str that lowercases, replaces every run of characters "
        "other than letters and digits with a single hyphen and strips leading and trailing "
        "hyphens. Accents are folded (e.g. 'Crème' -> 'creme'). "
    )
    plan = finalize_plan(single_step_plan(slug), slug)
    (only,) = plan.steps
    assert not unchecked(only.defines, only.checks)  # the example checks slugify
    assert wants_contract(plan, only, [])
    prompt = contract_prompt(slug, plan, only)
    assert ": Write slugify(text: str) -> str that lowercases, replaces every run" in prompt
