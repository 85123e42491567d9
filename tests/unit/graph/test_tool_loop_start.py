"""The standard profile's tool loop starts from the plain answer and never ends worse than it.

Scripted models, the real sandbox and workspace: the plain answer is staged for the loop to
edit, the step's checks beside it read-only; code the loop makes worse is replaced by the
start; a call written as text is taken as a call; nobody-answers runs offer no question tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from atom_agent import Context, run_task
from atom_agent.batch import BatchOptions, run_batch
from atom_agent.models.purpose import CallInfo
from atom_agent.nodes.executor import attempt
from atom_agent.nodes.executor.node import LOOP_MIN_SECONDS, _loop_time
from atom_agent.resources import Resources
from atom_agent.selection import candidates
from atom_agent.state import Check, Plan
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.workspace import Workspace

from .scripts import BAD_TEST, ExecutorScript, models, read, run_tests, step, write

TASK = "First write add(a, b). Then write sub(a, b)."
"""Ordered: the planner is asked (a task of unordered names is one step planned by code)."""
BOTH = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN_SUB = BOTH.replace("return a - b", "return b - a")
WORSE = "def add(a, b):\n    return 0\n\n\ndef sub(a, b):\n    return 0\n"


def _plan() -> Plan:
    calc = step("calc", criteria=["add(2, 3) == 5", "sub(5, 3) == 2"], defines=["add", "sub"])
    checks = [
        Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5"),
        Check(call="sub(5, 3)", expect="2", criterion="sub(5, 3) == 2"),
    ]
    return Plan(steps=[calc.model_copy(update={"checks": checks})])


def _run(
    tmp_path: Path, replies: list[AIMessage], plain: str = BROKEN_SUB
) -> tuple[object, ExecutorScript, dict[str, ScriptedChatModel], Context]:
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0)
    script = ExecutorScript({("calc", 1): replies}, plain=f"```python\n{plain}```\n")
    roles = models([_plan()], script)

    def no_witness(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose == "witness":
            return AIMessage(content="I cannot.")  # a witness for a failed step: no code
        return script(messages, info)

    roles["executor"] = ScriptedChatModel(respond=no_witness)
    return run_task(TASK, ctx, models=roles), script, roles, ctx


def _attempt(ctx: Context, run_id: str) -> Path:
    ws = Workspace(ctx.workspace)
    step_ref = ws.step(ws.run(run_id), "calc")
    (attempt,) = ws.list_attempts(step_ref)
    return attempt.path


def _tool_results(roles: dict[str, ScriptedChatModel]) -> list[dict[str, object]]:
    loop = [c.messages for c in roles["executor"].calls if c.tools]
    last = max(loop, key=len)
    return [json.loads(str(m.content)) for m in last if isinstance(m, ToolMessage)]


def test_the_loop_edits_the_staged_plain_answer_and_its_fix_is_kept(tmp_path: Path) -> None:
    outcome, script, roles, ctx = _run(
        tmp_path, [read("impl.py"), write("impl.py", BOTH), run_tests()]
    )
    assert outcome.status == "done", outcome  # type: ignore[attr-defined]
    prompt = script.prompts[("calc", 1)]
    assert "impl.py already holds this code" in prompt
    assert "test.py holds the step's checks (read-only)" in prompt
    first_read = _tool_results(roles)[0]
    assert first_read["content"] == BROKEN_SUB  # the loop began with the plain answer
    staged = _attempt(ctx, outcome.run_id) / "staging"  # type: ignore[attr-defined]
    assert (staged / "impl.py").read_text() == BOTH


def test_code_the_loop_made_worse_is_replaced_by_the_start(tmp_path: Path) -> None:
    outcome, _, roles, ctx = _run(
        tmp_path,
        [
            write("test.py", BAD_TEST),  # the checks are not the model's to rewrite
            write("impl.py", WORSE),
            run_tests(),
            AIMessage(content="Done."),
        ],
    )
    results = _tool_results(roles)
    assert "read-only" in str(results[0]["error"]) and "impl.py" in str(results[0]["error"])
    attempt = _attempt(ctx, outcome.run_id)  # type: ignore[attr-defined]
    # The plain answer passes add's check; the loop's code passes none: the start stays.
    assert (attempt / "staging" / "impl.py").read_text() == BROKEN_SUB
    assert "BAD" not in (attempt / "staging" / "test.py").read_text()
    assert "assert add(2, 3) == 6" not in (attempt / "staging" / "test.py").read_text()
    candidates = sorted(p.name for p in (attempt / "candidates").iterdir())
    assert candidates == ["0", "1"]  # the start and the loop's code, each run on the checks
    figures = json.loads((attempt / "messages" / "history.json").read_text())["figures"]
    assert figures["tool_calls"] == 3 and figures["tool_errors"] == 1
    assert figures["model_calls"] == 4 and figures["broken_calls"] == 0
    assert figures["largest_prompt"] > 0 and figures["context_window"] is None
    assert "kept the plain code" in figures["stopped"]


def test_a_later_attempt_starts_from_the_code_the_step_kept(tmp_path: Path) -> None:
    # Attempt 1 makes the code worse (the plain answer is kept); attempt 2 starts from that
    # kept code, not from an empty staging area, and fixes it.
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=2, max_replans=0)
    script = ExecutorScript(
        {
            ("calc", 1): [write("impl.py", WORSE), AIMessage(content="Done.")],
            ("calc", 2): [read("impl.py"), write("impl.py", BOTH), run_tests()],
        },
        plain=f"```python\n{BROKEN_SUB}```\n",
    )
    roles = models([_plan()], script)

    def no_witness(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose == "witness":
            return AIMessage(content="I cannot.")
        return script(messages, info)

    roles["executor"] = ScriptedChatModel(respond=no_witness)
    outcome = run_task(TASK, ctx, models=roles)

    assert outcome.status == "done", outcome
    second = [c for c in roles["executor"].calls if c.tools and c.info.attempt == 2]
    reads = [m for m in max((c.messages for c in second), key=len) if isinstance(m, ToolMessage)]
    assert json.loads(str(reads[0].content))["content"] == BROKEN_SUB
    assert "impl.py already holds this code" in script.prompts[("calc", 2)]
    ws = Workspace(ctx.workspace)
    attempt = ws.attempt(ws.step(ws.run(outcome.run_id), "calc"), 2)
    assert (attempt.path / "candidates" / "0" / "impl.py").read_text() == BROKEN_SUB


def test_a_plain_answer_that_meets_the_checks_needs_no_tool_loop(tmp_path: Path) -> None:
    outcome, script, roles, _ = _run(tmp_path, [], plain=BOTH)
    assert outcome.status == "done", outcome  # type: ignore[attr-defined]
    assert ("calc", 1) not in script.prompts  # the loop was never prompted
    assert all(not call.tools for call in roles["executor"].calls)


def test_a_call_written_as_text_is_run_as_a_call(tmp_path: Path) -> None:
    as_text = AIMessage(
        content=json.dumps({"name": "write_file", "arguments": {"path": "impl.py",
                                                                "content": BOTH}})
    )  # fmt: skip
    outcome, _, roles, ctx = _run(tmp_path, [as_text, run_tests()])
    assert outcome.status == "done", outcome  # type: ignore[attr-defined]
    assert _tool_results(roles)[0]["written"] == "impl.py"
    history = _attempt(ctx, outcome.run_id) / "messages" / "history.json"  # type: ignore[attr-defined]
    assert json.loads(history.read_text())["figures"]["recovered_calls"] == 1


def test_nobody_is_asked_in_a_batch_unless_its_settings_say_so(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "quiet", "task": TASK}) + "\n"
        + json.dumps({"id": "asks", "task": TASK, "settings": {"ask_user": True}}) + "\n"
    )  # fmt: skip
    ctx = Context(workspace=str(tmp_path / "ws"), max_attempts=1, max_replans=0,
                  candidate_zero=False)  # fmt: skip
    script = ExecutorScript({}, default=lambda: [write("impl.py", BOTH), run_tests()])
    roles = models([_plan()], script, cycle=True)
    with Resources(ctx, models=roles) as res:  # type: ignore[arg-type]
        run_batch(tasks, tmp_path / "out.jsonl", BatchOptions(ctx, 1, resources=res))
    offered = {"ask_user" in call.tool_names for call in roles["executor"].calls if call.tools}
    assert offered == {False, True}
    systems = {str(c.messages[0].content) for c in roles["executor"].calls if c.tools}
    assert any("Nobody can answer questions in this run" in s for s in systems)
    assert any("call `ask_user`" in s for s in systems)


def test_the_first_prompt_shows_the_start_and_the_checks_it_fails(tmp_path: Path) -> None:
    _, script, _, _ = _run(tmp_path, [write("impl.py", BOTH), run_tests()])
    prompt = script.prompts[("calc", 1)]
    assert "impl.py already holds this code" in prompt and BROKEN_SUB.strip() in prompt
    assert "passed, 1 failed." in prompt and "sub(5, 3) == 2: expected 2, got -2" in prompt


def test_a_loop_repeating_the_same_call_is_stopped(tmp_path: Path) -> None:
    outcome, _, roles, ctx = _run(tmp_path, [read("impl.py")] * 8)
    loop = [c.messages for c in roles["executor"].calls if c.tools]
    assert len(loop) == 3  # the third identical call ran; the model was not asked again
    history = _attempt(ctx, outcome.run_id) / "messages" / "history.json"  # type: ignore[attr-defined]
    assert json.loads(history.read_text())["figures"]["stopped"] == (
        "the same tool call and result 3 times"
    )


def test_a_loop_going_round_in_a_cycle_is_stopped(tmp_path: Path) -> None:
    noop = tool_call("edit_file", {"path": "impl.py", "old_text": "b - a", "new_text": "b - a"})
    outcome, _, roles, ctx = _run(tmp_path, [noop, read("impl.py")] * 6)
    loop = [c.messages for c in roles["executor"].calls if c.tools]
    assert len(loop) == 5  # edit, read, edit, read, edit: the edit came back the same 3 times
    results = _tool_results(roles)
    assert "changes nothing" in str(results[0]["error"])
    assert _stopped(ctx, outcome) == "the same tool call and result 3 times"


def test_test_runs_that_pass_no_more_than_the_start_end_the_loop(tmp_path: Path) -> None:
    # The start passes 1 of 2 checks; a rewrite that passes none, then one that passes 1 again.
    other = BROKEN_SUB.replace("b - a", "a - b - 1")
    replies = [write("impl.py", WORSE), run_tests(), write("impl.py", other), run_tests()] * 2
    outcome, _, roles, ctx = _run(tmp_path, replies)
    history = _attempt(ctx, outcome.run_id) / "messages" / "history.json"  # type: ignore[attr-defined]
    results = [json.loads(m["content"]) for m in json.loads(history.read_text())["messages"]
               if m["type"] == "tool"]  # fmt: skip
    # test.py: the two checks of the step and two of the signatures; the start passes three.
    assert [r["tests"]["passed"] for r in results if "tests" in r] == [2, 3]
    assert len([c for c in roles["executor"].calls if c.tools]) == 4
    assert _stopped(ctx, outcome).startswith(
        "2 test runs in a row passed no more tests than before; kept the plain code"
    )
    # Ended without a better code: the start stays staged (never worse than one plain call).
    committed = _attempt(ctx, outcome.run_id) / "staging" / "impl.py"  # type: ignore[attr-defined]
    assert committed.read_text() == BROKEN_SUB


def test_a_loop_past_its_time_ends_before_its_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One clock for the plain answer and the loop, 5 s later at each reading: the plain call
    # took 5 s, so the loop may take max(2 x 5 s, 20 s) = 20 s; its checks before calls read
    # 5, 10, 15 (calls made) and 20 s (time is up).
    readings = iter(range(0, 10_000, 5))
    clock = SimpleNamespace(monotonic=lambda: float(next(readings)))
    monkeypatch.setattr(candidates, "time", clock)
    monkeypatch.setattr(attempt, "time", clock)
    outcome, _, roles, ctx = _run(tmp_path, [read("impl.py"), read("test.py")] * 4)
    assert len([c for c in roles["executor"].calls if c.tools]) == 3
    assert _stopped(ctx, outcome).startswith("its time is up (20 s)")


def test_no_time_limit_without_a_real_plain_call_or_with_factor_zero() -> None:
    # A replayed or scripted plain answer costs nothing real to compare with.
    assert _loop_time(Context(), {"plain_seconds": 0.2}) is None  # type: ignore[typeddict-item]
    assert _loop_time(Context(loop_time_factor=0), {"plain_seconds": 30.0}) is None  # type: ignore[typeddict-item]
    assert _loop_time(Context(), {"plain_seconds": 30.0}) == 60.0  # type: ignore[typeddict-item]
    assert _loop_time(Context(), {"plain_seconds": 3.0}) == LOOP_MIN_SECONDS  # type: ignore[typeddict-item]


def _stopped(ctx: Context, outcome: object) -> str:
    history = _attempt(ctx, outcome.run_id) / "messages" / "history.json"  # type: ignore[attr-defined]
    return str(json.loads(history.read_text())["figures"]["stopped"])


def test_a_hallucinated_call_written_as_text_gets_the_tools_listed_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    hallucinated = AIMessage(content=json.dumps({"name": "sub", "arguments": {"a": 5, "b": 3}}))
    outcome, _, roles, _ = _run(tmp_path, [hallucinated, write("impl.py", BOTH), run_tests()])
    assert outcome.status == "done", outcome  # type: ignore[attr-defined]
    refused = _tool_results(roles)[0]
    assert "sub" in str(refused["error"]) and "write_file" in str(refused["error"])
