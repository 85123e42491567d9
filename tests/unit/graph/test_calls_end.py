"""Plans and contracts end where their structure does; a task that needs no plan gets none.

Scripted models keyed on each call's purpose (never on its prompt), the real planner, sandbox
and workspace: a task of a few unordered names is one step planned by code; a plan and a
contract call carry a schema that bounds their reply and a ``max_tokens`` sized to it; a
contract reply cut at its cap keeps its complete tests; the calls that ran to their cap are
counted per purpose in run.json, report.md and ``atom-agent runs calls``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent import Context, run_task
from atom_agent.cli.runs import calls_summary
from atom_agent.models.ledger import CallLedger, hit_cap, recording
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes.planner import (
    PLAN_STEPS_PER_REPLY,
    finalize_plan,
    one_step_task,
    plan_max_tokens,
    single_step_plan,
)
from atom_agent.rule_text import RULES_HEADER, with_rules
from atom_agent.state import Plan
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.verification.contracts import (
    TEST_CHARS,
    contract_max_tokens,
    write_contracts,
)
from atom_agent.workspace import Workspace

from .scripts import ExecutorScript, passing_attempt, step

UNORDERED = "Write add(a, b) that returns a + b and sub(a, b) that returns a - b."
ORDERED = "Step 1: write add(a, b) that returns a + b. Step 2: write sub(a, b) using add."
BOTH = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BOTH_TEST = (
    "from impl import add, sub\n\n\ndef test_both():\n    assert add(2, 3) == 5\n"
    "    assert sub(5, 3) == 2\n"
)


def _strings_and_arrays(schema: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every string and every array schema inside `schema`."""
    strings: list[dict[str, Any]] = []
    arrays: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string":
                strings.append(node)
            if node.get("type") == "array":
                arrays.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return strings, arrays


def _bounded(call_tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The one tool schema a sized call carried; every string and list in it is bounded."""
    (tool,) = call_tools
    schema = tool["function"]["parameters"]
    strings, arrays = _strings_and_arrays(schema)
    assert strings and arrays
    assert all("maxLength" in s for s in strings), strings
    assert all("maxItems" in a for a in arrays), arrays
    return dict(schema)


def _planner(plan: Plan | None, contracts: list[AIMessage]) -> ScriptedChatModel:
    """A planner model: `plan` for a plan call (None: a plan call fails the test)."""
    queue = list(contracts)

    def respond(messages: list[BaseMessage], info: CallInfo) -> Any:
        if info.purpose == "contract":
            return queue.pop(0) if queue else tool_call("Tests", {"tests": []})
        assert info.purpose == "plan", info
        assert plan is not None, "a task that needs no plan was planned by a model call"
        return tool_call("ProposedPlan", plan.model_dump(include=_PROPOSED))

    return ScriptedChatModel(respond=respond)


_PROPOSED = {
    "rationale": True,
    "steps": {
        "__all__": {"id", "title", "description", "acceptance_criteria", "depends_on", "defines"}
    },
}


def _run(tmp_path: Path, task: str, planner: ScriptedChatModel, step_id: str) -> Any:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0)
    executor = ScriptedChatModel(
        respond=ExecutorScript({(step_id, 1): passing_attempt(BOTH, BOTH_TEST)})
    )
    return run_task(task, ctx, models={"planner": planner, "executor": executor})


def test_a_task_of_unordered_names_is_one_step_planned_without_a_call(tmp_path: Path) -> None:
    assert one_step_task(UNORDERED)
    assert not one_step_task(ORDERED)
    assert not one_step_task("Write add(a, b). Then write sub(a, b) and mul(a, b).")
    assert not one_step_task(
        "Write alpha(x), beta(x), gamma(x), delta(x) and omega(x), each returning x."
    )
    planner = _planner(None, [])
    outcome = _run(tmp_path, UNORDERED, planner, "step1")
    assert outcome.status == "done"
    assert "plan" not in {c.info.purpose for c in planner.calls}
    run = json.loads((Path(outcome.run_dir) / "run.json").read_text())
    assert "plan" not in run["calls"]
    plan = json.loads((Path(outcome.run_dir) / "plan.json").read_text())["plan"]
    assert [s["defines"] for s in plan["steps"]] == [["add", "sub"]]


def test_a_plan_call_carries_a_bounded_schema_and_max_tokens_sized_to_it(
    tmp_path: Path,
) -> None:
    two = Plan(
        steps=[
            step("adder", criteria=["adds"], defines=["add"]),
            step("subber", criteria=["subtracts"], defines=["sub"], depends_on=["adder"]),
        ]
    )
    planner = _planner(two, [])
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0)
    script = {key: passing_attempt(BOTH, BOTH_TEST) for key in (("adder", 1), ("subber", 1))}
    executor = ScriptedChatModel(respond=ExecutorScript(script))
    outcome = run_task(ORDERED, ctx, models={"planner": planner, "executor": executor})
    (call,) = [c for c in planner.calls if c.info.purpose == "plan"]
    most = min(ctx.max_plan_steps, PLAN_STEPS_PER_REPLY)
    schema = _bounded(call.tools)
    assert schema["properties"]["steps"]["maxItems"] == most
    assert call.kwargs["max_tokens"] == plan_max_tokens(most)
    assert plan_max_tokens(1) < plan_max_tokens(2) < plan_max_tokens(most)
    assert outcome.status == "done"
    plan = json.loads((Path(outcome.run_dir) / "plan.json").read_text())["plan"]
    assert [s["id"] for s in plan["steps"]] == ["adder", "subber"]


def _contract_plan(task: str) -> Plan:
    return finalize_plan(single_step_plan(task), task)


CLASS_TASK = (
    "Write a Counter class. Counter() starts at zero. add(n) adds n to the count; a negative n "
    "raises ValueError. total() returns the count."
)


def test_a_contract_reply_is_a_bounded_list_of_tests_tied_to_clauses() -> None:
    plan = _contract_plan(CLASS_TASK)
    ids = [c.id for c in plan.clauses]
    tests = [
        {"clause": ids[-1], "test": "c = Counter(); c.add(2); c.add(3); assert c.total() == 5"},
        {"clause": ids[0], "test": "with pytest.raises(ValueError): Counter().add(-1)"},
    ]
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"name": "Tests", "args": {"tests": tests}, "id": "c1"}],
                response_metadata={"finish_reason": "stop"},
            )
        ]
    )
    ledger = CallLedger()
    with recording(ledger):
        out, replies = write_contracts(model, CLASS_TASK, plan)
    (call,) = model.calls
    schema = _bounded(call.tools)
    items = schema["properties"]["tests"]
    assert items["items"]["properties"]["test"]["maxLength"] == TEST_CHARS
    assert items["items"]["properties"]["clause"]["enum"] == [
        c.id for c in plan.clauses if c.id in items["items"]["properties"]["clause"]["enum"]
    ]
    assert call.kwargs["max_tokens"] == contract_max_tokens(items["maxItems"])
    checks = {c.describe(): c for c in out.steps[0].checks if c.origin != "task"}
    assert checks["c = Counter() ; c.add(2) ; c.add(3) ; c.total() == 5"].clause == ids[-1]
    assert checks["Counter().add(-1) raises ValueError"].raises == "ValueError"
    assert len(replies) == 1
    assert ledger.rows["contract"]["calls"] == 1 and ledger.rows["contract"]["capped"] == 0


def test_a_contract_cut_at_its_cap_keeps_its_complete_tests_and_counts_the_cap() -> None:
    task = "Write add(a, b) that returns the sum of two integers."
    plan = _contract_plan(task)
    # What the embedded model hands back when max_tokens cuts a constrained reply: the JSON
    # written so far, as an invalid tool call, and finish_reason "length".
    cut = (
        '{"name": "Tests", "arguments": {"tests": [{"test": "assert add(2, 3) == 5"}, '
        '{"test": "assert add(-1, 1) == 0"}, {"test": "assert add(10'
    )
    reply = AIMessage(
        content=cut,
        invalid_tool_calls=[
            {"name": None, "args": cut, "id": "c1", "error": "cut", "type": "invalid_tool_call"}
        ],
        response_metadata={"finish_reason": "length"},
    )
    model = ScriptedChatModel(responses=[reply])
    ledger = CallLedger()
    with recording(ledger):
        out, _ = write_contracts(model, task, plan)
    made = [c.describe() for c in out.steps[0].checks if c.origin == "planner"]
    assert made == ["add(2, 3) == 5", "add(-1, 1) == 0"]
    assert ledger.rows["contract"]["capped"] == 1


def test_a_reply_hit_its_cap_by_finish_reason_or_by_its_tokens() -> None:
    assert hit_cap(AIMessage(content="", response_metadata={"finish_reason": "length"}))
    assert hit_cap(AIMessage(content="", response_metadata={"stop_reason": "max_tokens"}))
    assert not hit_cap(AIMessage(content="", response_metadata={"finish_reason": "stop"}), 10)
    used = AIMessage(
        content="x",
        usage_metadata={"input_tokens": 5, "output_tokens": 10, "total_tokens": 15},
    )
    assert hit_cap(used, 10) and not hit_cap(used, 11) and not hit_cap(used)


def test_run_json_report_and_runs_calls_count_the_calls_that_hit_their_cap(
    tmp_path: Path,
) -> None:
    def cut(messages: list[BaseMessage], info: CallInfo) -> Any:
        if info.purpose == "contract":
            return AIMessage(
                content='{"tests": [{"test": "assert add(2, 3) == 5"}, {"test": "assert',
                response_metadata={"finish_reason": "length"},
            )
        raise AssertionError(f"unexpected planner call: {info}")

    outcome = _run(tmp_path, UNORDERED, ScriptedChatModel(respond=cut), "step1")
    run_dir = Path(outcome.run_dir)
    calls = json.loads((run_dir / "run.json").read_text())["calls"]
    assert calls["contract"]["capped"] == 1
    assert all(row["capped"] == 0 for p, row in calls.items() if p != "contract")
    report = (run_dir / "report.md").read_text()
    assert "| hit their cap |" in report and "| contract | 1 |" in report
    assert report.split("| contract | 1 |", 1)[1].split("\n", 1)[0].rstrip().endswith("| 1 |")
    summary = calls_summary(Workspace(tmp_path / "ws"))
    assert summary["purposes"]["contract"]["capped"] == 1


def test_a_one_step_plan_is_titled_by_the_task_not_by_the_rules_it_carries() -> None:
    task = "Write area(r) that returns the area of a circle of radius r."
    carried = with_rules(task, f"{RULES_HEADER}\n- every public function carries a docstring")
    assert carried.startswith(RULES_HEADER)
    assert single_step_plan(carried).steps[0].title == task
    assert single_step_plan(task).steps[0].title == task
