"""A run on a project killed and resumed: the branch, the checkout and the checkpoint agree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from atom_agent import Resources, build_graph, run_task
from atom_agent.nodes.project import make_project_reflector
from atom_agent.project.checkout import open_checkout

from .calc import GOOD_ADD, GOOD_MUL, answers, ctx, git, project

REPO = Path(__file__).resolve().parents[3]


def _branch_log(repo: Path, run_id: str) -> list[str]:
    return git(repo, "log", "--format=%s", f"main..atom/{run_id}").splitlines()


@pytest.mark.integration
def test_sigkill_after_the_first_commit_then_resume_commits_each_step_once(tmp_path: Path) -> None:
    repo = project(tmp_path / "proj")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
    env |= {"PYTHONPATH": str(REPO), "ATOM_WORKSPACE": str(tmp_path / "ws"),
            "ATOM_MODELS_FACTORY": "tests.unit.project.calc:slow_calc",
            "ATOM_TEST_LATENCY": "1.5", "ATOM_SANDBOX_TIMEOUT_S": "60"}  # fmt: skip
    cli = [sys.executable, "-m", "atom_agent.cli"]
    task = "Implement `calc.add` and `calc.mul` as their docstrings say."
    proc = subprocess.Popen(
        [*cli, "run", task, "--repo", str(repo), "--run-id", "k1", "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be killed"
        try:
            if _branch_log(repo, "k1"):
                break
        except subprocess.CalledProcessError:
            pass  # the branch is not there yet
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    checkout = tmp_path / "ws" / "runs" / "k1" / "project"
    assert (checkout / ".git").exists(), "a run that can be resumed keeps its checkout"
    resumed = subprocess.run([*cli, "resume", "k1", "--json"], env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "done"
    assert _branch_log(repo, "k1") == ["atom: mul in calc/__init__.py",
                                       "atom: add in calc/__init__.py"]  # fmt: skip
    assert not checkout.exists(), "the finished run hands its branch back: no worktree holds it"
    assert git(repo, "status", "--porcelain") == ""


def test_a_reflector_rerun_after_its_commit_finds_the_commit_and_commits_nothing_twice(
    tmp_path: Path,
) -> None:
    """The process died after the git commit, before the checkpoint: the node runs again."""
    repo = project(tmp_path / "proj")
    context = ctx(tmp_path, repo)
    model = answers(add=GOOD_ADD, mul=GOOD_MUL)
    outcome = run_task("Implement `calc.add` as its docstring says.", context, models=model)
    assert outcome.status == "done"
    before = _branch_log(repo, outcome.run_id)
    # The process died before the run finished, so its checkout was still there.
    open_checkout(repo, tmp_path / "ws" / "runs" / outcome.run_id / "project", outcome.run_id)
    with Resources(context, models=model) as res:
        graph = build_graph(res, checkpointer=res.checkpointer)
        config: Any = {"configurable": {"thread_id": outcome.run_id}}
        state = dict(graph.get_state(config).values)
        # The state as the reflector saw it before its commit reached the checkpoint.
        again: Any = {**state, "current_step": "1-add", "step_status": {"1-add": "pending"}}
        update = make_project_reflector(res)(again)
    assert update["decision"] == "commit" and update["step_status"]["1-add"] == "committed"
    assert _branch_log(repo, outcome.run_id) == before == ["atom: add in calc/__init__.py"]
