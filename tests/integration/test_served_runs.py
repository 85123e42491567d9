"""Whole runs through llama.cpp's `llama-server` (an OpenAI-compatible server) on both profiles.

The embedded model served by `llama-server --jinja`, reached as ``openai:`` with a base URL
and no key: the small profile commits the task; the standard profile's tool loop drives real
tool calls through the server's own tool-call parsing. A server that dies mid-run (stopped
between requests, or killed while it decodes one) stops the run with one line, and
`atom-agent resume` finishes it once the server is back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.llama_server import LlamaServer, llama_server_fixture  # noqa: F401  (`llama_server`)

from atom_agent import Context, run_task
from atom_agent.workspace import Workspace, read_json

pytestmark = [pytest.mark.local_model, pytest.mark.integration]

SERVED = "openai:qwen2.5-coder-1.5b-instruct"
TASK = (
    "Write a Python function clamp(x, low, high) that returns x limited to the range "
    "[low, high]. For example clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0."
)

TWO_STEPS = (
    "Write two Python functions in one module: clamp(x, low, high) returns x limited to the "
    "range [low, high], and sign(x) returns -1, 0 or 1 by the sign of x."
)


def _context(server: LlamaServer, tmp: Path, profile: str, **more: object) -> Context:
    fields: dict[str, object] = {"max_tool_calls": 8, **more}
    return Context(model=SERVED, base_url=server.base_url, model_profile=profile,
                   workspace=str(tmp / "ws"), max_attempts=1, max_replans=0,
                   ask_user=False, **fields)  # type: ignore[arg-type]  # fmt: skip


def _figures(ws: Workspace, run_id: str) -> list[dict[str, object]]:
    run = ws.run(run_id)
    return [
        json.loads(attempt.history_json.read_text())["figures"]
        for step in ws.list_steps(run)
        for attempt in ws.list_attempts(step)
    ]


@pytest.mark.timeout(900)
def test_the_small_profile_commits_a_task_through_the_server(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    ctx = _context(llama_server, tmp_path, "small")
    outcome = run_task(TASK, ctx)
    assert outcome.status == "done", (outcome, llama_server.log_tail())
    assert outcome.usage["model_calls"] >= 1 and outcome.usage["total_tokens"] > 0
    ws = Workspace(ctx.workspace)
    run = ws.run(outcome.run_id)
    assert json.loads(run.run_json.read_text())["models"]["executor"] == SERVED
    for step, status in outcome.step_status.items():
        assert status == "committed" and (ws.step(run, step).artifacts / "impl.py").is_file()


@pytest.mark.timeout(900)
def test_the_standard_tool_loop_runs_on_real_calls_through_the_server(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    # No plain answer to start from: the loop itself must make the call, parsed by the server
    # and answered by the loop. One call: a second reply of this model has run on in prose to
    # its 2,048-token cap (five minutes on two cores, the suite's longest test).
    ctx = _context(llama_server, tmp_path, "standard", candidate_zero=False, max_tool_calls=1)
    outcome = run_task(TASK, ctx)
    assert outcome.status in ("done", "failed"), (outcome, llama_server.log_tail())
    assert outcome.usage["total_tokens"] > 0
    ws = Workspace(ctx.workspace)
    figures = _figures(ws, outcome.run_id)
    assert sum(int(f["tool_calls"]) for f in figures) >= 1, figures  # type: ignore[call-overload]
    histories = [a.history_json for s in ws.list_steps(ws.run(outcome.run_id))
                 for a in ws.list_attempts(s)]  # fmt: skip
    assert any('"tool_calls"' in h.read_text() for h in histories)
    if outcome.status == "done":
        run = ws.run(outcome.run_id)
        assert all((ws.step(run, s).artifacts / "impl.py").is_file() for s in outcome.step_status)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    # No plain answer first: after the plan, the step's code needs the model (the server).
    env["ATOM_CANDIDATE_ZERO"] = "false"
    return subprocess.run(
        [sys.executable, "-m", "atom_agent.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


@pytest.mark.timeout(1800)
def test_a_server_that_dies_mid_run_stops_it_with_one_line_and_resume_finishes_it(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    common = ["--model", SERVED, "--base-url", llama_server.base_url, "--workspace",
              str(tmp_path / "ws"), "--max-attempts", "1", "--json"]  # fmt: skip
    # The run stops after planning (plan approval): the server then dies.
    first = _cli("run", TASK, "--approve-plan", "--run-id", "served", *common, cwd=tmp_path)
    assert first.returncode == 3, first.stderr
    ws = Workspace(tmp_path / "ws")
    plan_before = ws.read_plan(ws.run("served"))
    llama_server.stop()
    try:
        dead = _cli("resume", "served", "--answer", "approve", *common, cwd=tmp_path)
    finally:
        llama_server.start()
    assert dead.returncode == 2, dead.stdout + dead.stderr
    errors = [line for line in dead.stderr.splitlines() if line.startswith("atom-agent: error")]
    assert len(errors) == 1 and "cannot be reached" in errors[0], dead.stderr
    assert "atom-agent resume served" in errors[0]
    assert "Traceback" not in dead.stderr
    # Back up: the same run finishes from where it stopped, on the plan it had.
    done = _cli("resume", "served", "--answer", "approve", *common, cwd=tmp_path)
    outcome = json.loads(done.stdout)
    assert outcome["status"] in ("done", "failed"), done.stderr
    assert ws.read_plan(ws.run("served")) == plan_before
    assert len(read_json(ws.run("served").plan_json)["revisions"]) == 1


def _kept(ws: Workspace, run_id: str) -> dict[str, str]:
    """The plan, every committed step's code and every finished attempt's record."""
    run = ws.run(run_id)
    files = [s.artifacts / "impl.py" for s in ws.list_steps(run)]
    files += [a.history_json for s in ws.list_steps(run) for a in ws.list_attempts(s)]
    kept = {str(f.relative_to(run.path)): f.read_text() for f in files if f.is_file()}
    return kept | ({"plan": repr(ws.read_plan(run))} if run.plan_json.is_file() else {})


@pytest.mark.timeout(1800)
def test_a_server_killed_during_a_request_stops_the_run_with_one_line_and_resume_finishes_it(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    common = ["--model", SERVED, "--base-url", llama_server.base_url, "--workspace",
              str(tmp_path / "ws"), "--max-attempts", "1", "--json"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    env["ATOM_CANDIDATE_ZERO"] = "false"
    run = subprocess.Popen(
        [sys.executable, "-m", "atom_agent.cli", "run", TWO_STEPS, "--run-id", "cut", *common],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # A request after the first one seen decoding (that one has answered and is on disk)
        # is cut; requests are told apart by the server's task id, even back to back.
        first: int | None = None
        while True:
            assert run.poll() is None, "the run ended before its second request"
            task = llama_server.current_task()
            if task is not None and first is None:
                first = task
            elif task is not None and task != first:
                break
            time.sleep(0.05)
        llama_server.kill()
        out, err = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
        if run.stdout is not None and not run.stdout.closed:
            run.communicate()  # its pipes closed here, not by a later test's garbage collection
        llama_server.start()
    assert run.returncode == 2, out + err
    errors = [line for line in err.splitlines() if line.startswith("atom-agent: error")]
    assert len(errors) == 1, err
    assert "model server" in errors[0] and "atom-agent resume cut" in errors[0], errors[0]
    assert "Traceback" not in err
    ws = Workspace(tmp_path / "ws")
    kept = _kept(ws, "cut")
    # Back up: the same run finishes from where it stopped; nothing committed before is lost.
    done = _cli("resume", "cut", *common, cwd=tmp_path)
    outcome = json.loads(done.stdout)
    assert outcome["status"] in ("done", "failed"), done.stderr
    after = _kept(ws, "cut")
    assert kept and all(after.get(name) == text for name, text in kept.items()), (kept, after)
