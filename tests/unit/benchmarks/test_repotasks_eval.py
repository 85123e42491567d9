"""benchmarks/repotasks_eval.py: the plain call's file, the agent's worktree, both scored."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from atom_agent.batch import BatchOptions, ResultsFile
from atom_agent.context import Context
from atom_agent.errors import ContextWindowError, InvalidInputError
from atom_agent.resources import Resources
from atom_agent.testing import ScriptedChatModel

# Loaded from its file: benchmarks/ is scripts, not a package, and a tests folder of that
# name would shadow it.
_SPEC = importlib.util.spec_from_file_location(
    "repotasks_eval", Path(__file__).resolve().parents[3] / "benchmarks" / "repotasks_eval.py"
)
assert _SPEC is not None and _SPEC.loader is not None
ev = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ev)

BLANK = 'def answer():\n    """The answer."""\n    raise NotImplementedError\n'
FIXED = 'def answer():\n    """The answer."""\n    return 42\n'
TASK = "In this project, `pkg.mod.answer()` raises NotImplementedError. Implement it."

# Stands in for shared/repotasks/oracle.py: same arguments, same line and JSON shape. The
# "oracle test" calls answer(); the "regression suite" fails when the file says BREAK.
ORACLE = """
import json, sys
from pathlib import Path
cand, task_dir, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[4])
source = (cand / "pkg" / "mod.py").read_text()
scope = {}
try:
    exec(source, scope)
    ok = scope["answer"]() == 42
except Exception:
    ok = False
broken = "BREAK" in source
oracle = {"passed": int(ok), "failed": int(not ok), "skipped": 0, "timeout": False,
          "failures": [] if ok else ["t::test_answer"]}
regression = {"passed": 2 - broken, "failed": int(broken), "skipped": 0, "timeout": False,
              "failures": ["t::test_other"] if broken else []}
verdict = "PASS" if ok and not broken else "FAIL"
tid = task_dir.name
print(f"{tid} {verdict} oracle {oracle['passed']}/1 regression {regression['passed']}/2")
out.write_text(json.dumps([{"id": tid, "verdict": verdict, "oracle": oracle,
                            "regression": regression}]))
"""


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A prepared task set of one task, t1, in the layout prepare.py writes."""
    root = tmp_path / "out"
    repo = root / "t1" / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text(BLANK)
    (root / "t1" / "task.json").write_text(
        json.dumps({"id": "t1", "target": {"file": "pkg/mod.py"}})
    )
    (root / "tasks.jsonl").write_text(
        json.dumps({"id": "t1", "task": TASK, "repo": "t1/repo"}) + "\n"
    )
    return root


@pytest.fixture
def oracle(tmp_path: Path) -> Path:
    path = tmp_path / "oracle.py"
    path.write_text(ORACLE)
    return path


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_plain_arm_puts_the_replied_file_in_a_copy_and_scores_it(
    out: Path, oracle: Path, tmp_path: Path
) -> None:
    ws = _ws(tmp_path)
    model = ScriptedChatModel(responses=[f"Sure.\n```python\n{FIXED}```\nDone."])
    rows = ev.plain_arm(model, ev.load_tasks(out), ws, oracle)

    row = rows["t1"]
    assert row["pass"] is True
    assert row["oracle_line"] == "t1 PASS oracle 1/1 regression 2/2"
    assert row["regression"] == {"passed": 2, "failed": 0, "skipped": 0, "timeout": False,
                                 "failures": []}  # fmt: skip
    assert row["tokens"] > 0
    assert (ws / "plain" / "t1" / "repo" / "pkg" / "mod.py").read_text() == FIXED
    assert (out / "t1" / "repo" / "pkg" / "mod.py").read_text() == BLANK  # the prepared repo
    (call,) = model.calls
    (prompt,) = call.messages
    assert prompt.content == ev.PLAIN_PROMPT.format(task=TASK, file="pkg/mod.py", source=BLANK)
    assert "Reply with the complete new content of pkg/mod.py in one ```python block." in str(
        prompt.content
    )
    assert call.kwargs["temperature"] == 0.0
    assert call.kwargs["max_tokens"] >= len(BLANK) // 4
    assert _rows(ws / "repotasks_plain.jsonl") == [row]

    # Resumed: the task is recorded, so the model (with no reply left) is not called again.
    assert ev.plain_arm(ScriptedChatModel(responses=[]), ev.load_tasks(out), ws, oracle) == rows


def test_a_reply_without_code_leaves_the_file_unchanged(
    out: Path, oracle: Path, tmp_path: Path
) -> None:
    ws = _ws(tmp_path)
    # Code, but not in a block: the reply is not the file.
    model = ScriptedChatModel(responses=["answer = lambda: 42"])
    row = ev.plain_arm(model, ev.load_tasks(out), ws, oracle)["t1"]
    assert row["pass"] is False
    assert row["reason"] == "no code block in the reply (file unchanged)"
    assert (ws / "plain" / "t1" / "repo" / "pkg" / "mod.py").read_text() == BLANK


def test_a_prompt_larger_than_the_window_is_a_fail_not_an_error(
    out: Path, oracle: Path, tmp_path: Path
) -> None:
    ws = _ws(tmp_path)
    model = ScriptedChatModel(responses=[])  # any call would raise: none is made
    row = ev.plain_arm(model, ev.load_tasks(out), ws, oracle, window=20)["t1"]
    assert (row["status"], row["reason"], row["pass"]) == ("fail", ev.WINDOW_FAIL, False)
    assert model.calls == []

    # The model's own check (the estimate let the prompt through) ends the same way.
    def too_long(messages: list[BaseMessage]) -> str:
        raise ContextWindowError("Requested tokens (9000) exceed context window of 8192")

    row = ev.plain_call(ScriptedChatModel(respond=too_long), ev.load_tasks(out)[0], ws, window=None)
    assert (row["status"], row["reason"]) == ("fail", ev.WINDOW_FAIL)


def _fake_batch(source: str | None, project: bool = True) -> Any:
    """A run_batch that 'runs' the task: a result line, a run.json, a worktree holding `source`."""

    def batch(tasks_path: Path, results: Path, options: BatchOptions) -> dict[str, Any]:
        (line,) = [json.loads(x) for x in tasks_path.read_text().splitlines()]
        assert Path(line["repo"]).is_absolute() and options.isolated_memory
        run_id = f"{tasks_path.stem}.{line['id']}"
        run_dir = Path(options.context.workspace) / "runs" / run_id
        run_dir.mkdir(parents=True)
        worktree = run_dir.parent.parent / "worktrees" / run_id
        shutil.copytree(line["repo"], worktree)
        if source is not None:
            (worktree / "pkg" / "mod.py").write_text(source)
        record: dict[str, Any] = {"run_id": run_id}
        if project:
            head = "b" * 40 if source is not None else "a" * 40
            record["project"] = {
                "repo": line["repo"],
                "worktree": str(worktree),
                "branch": f"atom/{run_id}",
                "base": "a" * 40,
            }
            record["deliverable"] = {"head": head}  # where a run hands its branch back
        (run_dir / "run.json").write_text(json.dumps(record))
        done = {"id": line["id"], "run_id": run_id, "status": "done", "duration_s": 5.5}
        ResultsFile(results).append({**done, "usage": {"total_tokens": 1234}})
        return {}

    return batch


def test_agent_arm_scores_the_worktree_its_run_json_names(
    out: Path, oracle: Path, tmp_path: Path
) -> None:
    ws = _ws(tmp_path)
    with Resources(Context(workspace=str(ws))) as res:
        rows = ev.agent_arm(res, ev.load_tasks(out), ws, oracle, batch=_fake_batch(FIXED))
    row = rows["t1"]
    assert (row["pass"], row["committed"], row["status"]) == (True, True, "done")
    assert (row["tokens"], row["seconds"]) == (1234, 5.5)
    whole = _rows(ws / "repotasks.jsonl")
    assert whole == [{"id": "t1", "task": TASK, "repo": str((out / "t1" / "repo").resolve())}]
    assert not ev.regression_broken(row)


def test_a_committed_change_that_breaks_the_suite_is_counted(
    out: Path, oracle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _ws(tmp_path)
    with Resources(Context(workspace=str(ws))) as res:
        agent = ev.agent_arm(
            res, ev.load_tasks(out), ws, oracle, batch=_fake_batch(FIXED + "BREAK = 1\n")
        )
    assert agent["t1"]["pass"] is False and ev.regression_broken(agent["t1"])
    plain = {"t1": {"id": "t1", "pass": True, "tokens": 10, "seconds": 1.0}}
    table = ev.report(["t1"], {"plain": plain, "agent": agent})
    assert table["regression_broken_by_commit"] == ["t1"]
    assert (table["fixed_by_agent"], table["broken_by_agent"]) == ([], ["t1"])
    assert table["plain"]["solved"] == 1 and table["agent"]["solved"] == 0
    assert "regression broken by a committed change: 1 ['t1']" in capsys.readouterr().out


def test_without_project_mode_the_task_is_an_error_and_is_tried_again(
    out: Path, oracle: Path, tmp_path: Path
) -> None:
    ws = _ws(tmp_path)
    tasks = ev.load_tasks(out)
    with Resources(Context(workspace=str(ws))) as res:
        row = ev.agent_arm(res, tasks, ws, oracle, batch=_fake_batch(FIXED, project=False))["t1"]
        assert (row["status"], row["pass"]) == ("error", False)
        assert "run.json has no project" in row["error"]

        def refuses(tasks_path: Path, results: Path, options: BatchOptions) -> dict[str, Any]:
            raise InvalidInputError("line 1: unknown key(s) ['repo'] (allowed: id, task, settings)")

        # The error row is not an outcome: the next invocation runs the task again.
        row = ev.agent_arm(res, tasks, ws, oracle, batch=refuses)["t1"]
    assert row["status"] == "error" and "unknown key(s) ['repo']" in row["error"]
    assert len(_rows(ws / "repotasks_agent.jsonl")) == 2


def test_help_runs_without_a_model() -> None:
    with pytest.raises(SystemExit) as info:
        ev.main(["--help"])
    assert info.value.code == 0
