"""The workspace tree contract: layout, json files with schema versions, commits, dependencies."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from atom_agent.errors import (
    CommitError,
    SchemaVersionError,
    WorkspaceError,
    WorkspaceNotFoundError,
)
from atom_agent.workspace import SCHEMA_VERSION, Workspace, read_json
from atom_agent.workspace._commit import current_attempt


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def test_layout_matches_the_design(ws: Workspace) -> None:
    run = ws.create_run("r1", task="add an LRU cache", models={"executor": "local"})
    step = ws.create_step(
        run, "cache", depends_on=[], title="cache module", acceptance_criteria=["get/put work"]
    )
    attempt = ws.new_attempt(step)
    root = ws.root
    assert run.run_json == root / "runs/r1/run.json"
    assert run.plan_json == root / "runs/r1/plan.json"
    assert run.report_md == root / "runs/r1/report.md"
    assert step.step_json == root / "runs/r1/steps/cache/step.json"
    assert attempt.staging == root / "runs/r1/steps/cache/attempts/1/staging"
    assert attempt.history_json == root / "runs/r1/steps/cache/attempts/1/messages/history.json"
    assert attempt.verdict_json == root / "runs/r1/steps/cache/attempts/1/verdict.json"
    assert step.artifacts == root / "runs/r1/steps/cache/committed/artifacts"
    assert ws.checkpoints_path == root / "checkpoints.sqlite"
    assert attempt.staging.is_dir() and attempt.messages_dir.is_dir()
    assert ws.read_run(run)["task"] == "add an LRU cache"
    assert ws.read_step(step)["acceptance_criteria"] == ["get/put work"]


def test_every_json_file_carries_a_schema_version(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    step = ws.create_step(run, "s1")
    attempt = ws.new_attempt(step)
    ws.write_plan(run, {"steps": []})
    ws.write_verdict(attempt, {"passed": True})
    ws.write_history(attempt, [])
    for path in (
        run.run_json,
        run.plan_json,
        step.step_json,
        attempt.verdict_json,
        attempt.history_json,
    ):
        assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_newer_or_missing_schema_versions_are_refused(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    run.run_json.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1, "task": "t"}))
    with pytest.raises(SchemaVersionError, match="upgrade"):
        ws.read_run(run)
    run.run_json.write_text(json.dumps({"task": "t"}))
    with pytest.raises(SchemaVersionError, match="no schema_version"):
        ws.read_run(run)
    run.run_json.write_text("{not json")
    with pytest.raises(WorkspaceError, match="not valid JSON"):
        ws.read_run(run)


def test_runs_are_listed_and_read_back(ws: Workspace) -> None:
    assert ws.list_runs() == []
    first = ws.create_run(task="one")
    second = ws.create_run("zz-second", task="two")
    (ws.runs_dir / "stray-dir").mkdir()  # not a run: no run.json
    assert [r.run_id for r in ws.list_runs()] == [first.run_id, second.run_id]
    assert ws.run(second.run_id) == second
    ws.update_run(second, status="done", cost_usd=0.0)
    assert ws.read_run(ws.run("zz-second"))["status"] == "done"
    with pytest.raises(WorkspaceNotFoundError):
        ws.run("nope")
    with pytest.raises(WorkspaceError, match="already exists"):
        ws.create_run("zz-second", task="again")


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", ".hidden", "x" * 200, "..", "a b"])
def test_ids_that_are_not_path_safe_are_refused(ws: Workspace, bad: str) -> None:
    with pytest.raises(WorkspaceError, match="not a valid id"):
        ws.create_run(bad, task="t")
    run = ws.create_run(task="t")
    with pytest.raises(WorkspaceError, match="not a valid id"):
        ws.create_step(run, bad)


def test_plan_revisions_are_kept(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    assert ws.write_plan(run, {"steps": ["a"]}) == 1
    assert ws.write_plan(run, {"steps": ["a", "b"]}, reason="step a failed twice") == 2
    assert ws.read_plan(run) == {"steps": ["a", "b"]}
    revisions = read_json(run.plan_json)["revisions"]
    assert [r["revision"] for r in revisions] == [1, 2]
    assert revisions[0]["plan"] == {"steps": ["a"]}
    assert revisions[1]["reason"] == "step a failed twice"
    assert not run.report_md.exists()
    assert ws.write_report(run, "# Run r1\n").read_text(encoding="utf-8") == "# Run r1\n"


def test_steps_and_attempts(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    a = ws.create_step(run, "a")
    b = ws.create_step(run, "b", depends_on=["a"])
    assert [s.step_id for s in ws.list_steps(run)] == ["a", "b"]
    assert [ws.new_attempt(b).n for _ in range(3)] == [1, 2, 3]
    assert [x.n for x in ws.list_attempts(b)] == [1, 2, 3]
    assert ws.attempt(b, 2).staging.is_dir()
    with pytest.raises(WorkspaceNotFoundError):
        ws.attempt(b, 4)
    again = ws.create_step(run, "a", title="replanned")
    assert again == a and ws.read_step(a)["title"] == "replanned"
    ws.update_step(b, status="running")
    assert ws.read_step(b)["status"] == "running"


def test_commit_promotes_staging_and_recommit_replaces(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    step = ws.create_step(run, "s1")
    first = ws.new_attempt(step)
    (first.staging / "impl.py").write_text("v = 1\n")
    (first.staging / "old_only.py").write_text("x = 0\n")
    (first.staging / "pkg").mkdir()
    (first.staging / "pkg" / "mod.py").write_text("y = 2\n")
    (first.staging / "__pycache__").mkdir()
    (first.staging / "__pycache__" / "impl.cpython-311.pyc").write_bytes(b"\0")
    os.symlink("/etc/passwd", first.staging / "leak")  # generated code may make symlinks
    assert current_attempt(step.committed_dir) is None
    artifacts = ws.commit(step, first)
    assert artifacts == step.artifacts
    assert (artifacts / "impl.py").read_text() == "v = 1\n"
    assert (artifacts / "pkg" / "mod.py").read_text() == "y = 2\n"
    assert not (artifacts / "__pycache__").exists() and not (artifacts / "leak").exists()
    assert current_attempt(step.committed_dir) == 1

    second = ws.new_attempt(step)
    (second.staging / "impl.py").write_text("v = 2\n")
    ws.commit(step, second)
    assert (step.artifacts / "impl.py").read_text() == "v = 2\n"
    assert not (step.artifacts / "old_only.py").exists()
    assert current_attempt(step.committed_dir) == 2
    # Only the live version remains: superseded versions and temp dirs are collected.
    hidden = [p.name for p in step.committed_dir.iterdir() if p.name != "artifacts"]
    assert len(hidden) == 1 and hidden[0].startswith(".attempt-2-")
    # Staging is copied, not moved: the attempt stays inspectable.
    assert (second.staging / "impl.py").exists()


def test_commit_copies_a_tree_nested_deeper_than_the_recursion_limit(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    step = ws.create_step(run, "s1")
    attempt = ws.new_attempt(step)
    depth = sys.getrecursionlimit() + 200  # generated code may nest directories this deep
    deepest = attempt.staging
    for _ in range(depth):
        deepest = deepest / "d"
        deepest.mkdir()
    (deepest / "leaf.py").write_text("x = 1\n")
    os.mkfifo(attempt.staging / "pipe")  # a special file would block a reader: skipped
    try:
        artifacts = ws.commit(step, attempt)
        leaf = artifacts.resolve()
        for _ in range(depth):
            leaf = leaf / "d"
        assert (leaf / "leaf.py").read_text() == "x = 1\n"
        assert not (artifacts / "pipe").exists()
    finally:  # shutil.rmtree (pytest's clean-up) recurses: remove the deep chains here
        for top in (attempt.staging, *step.committed_dir.glob(".attempt-*")):
            _remove_chain(top / "d")


def _remove_chain(top: Path) -> None:
    """Remove a chain of directories named ``d`` (and the files in them), deepest first."""
    chain = []
    while top.is_dir():
        chain.append(top)
        top = top / "d"
    for directory in reversed(chain):
        for entry in directory.iterdir():
            if not entry.is_dir():
                entry.unlink()
        directory.rmdir()


def test_commit_refuses_mismatched_or_missing_staging(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    s1, s2 = ws.create_step(run, "s1"), ws.create_step(run, "s2")
    attempt = ws.new_attempt(s1)
    with pytest.raises(WorkspaceError, match="belongs to step"):
        ws.commit(s2, attempt)
    attempt.staging.rmdir()
    with pytest.raises(CommitError, match="nothing to commit"):
        ws.commit(s1, attempt)


def test_dependency_artifacts(ws: Workspace) -> None:
    run = ws.create_run("r1", task="t")
    a = ws.create_step(run, "a")
    b = ws.create_step(run, "b")
    c = ws.create_step(run, "c", depends_on=["a", "b"])
    assert ws.dependency_artifacts(a) == {}
    attempt = ws.new_attempt(a)
    (attempt.staging / "impl.py").write_text("A = 1\n")
    ws.commit(a, attempt)
    with pytest.raises(CommitError, match="'b', which has no committed artifacts"):
        ws.dependency_artifacts(c)
    ws.commit(b, ws.new_attempt(b))
    deps = ws.dependency_artifacts(c)
    assert list(deps) == ["a", "b"]
    assert deps["a"] == a.artifacts and (deps["a"] / "impl.py").read_text() == "A = 1\n"


def test_read_json_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceNotFoundError):
        read_json(tmp_path / "absent.json")
