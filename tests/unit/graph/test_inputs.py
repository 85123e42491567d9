"""Bad input to a run is a clear error, and nothing is written."""

from __future__ import annotations

import pytest

from atom_agent import Context, Resources, build_graph, run_task
from atom_agent.cli import main
from atom_agent.errors import InvalidInputError, WorkspaceError
from atom_agent.run import MAX_TASK_CHARS
from atom_agent.state import Plan

from .scripts import ExecutorScript, models, passing_attempt, step


def _roles() -> dict:  # type: ignore[type-arg]
    return models([Plan(steps=[step("one")])], ExecutorScript({("one", 1): passing_attempt()}))


@pytest.mark.parametrize("task", ["", "   ", None, 42])
def test_empty_or_non_string_tasks(ctx: Context, task: object) -> None:
    with pytest.raises(InvalidInputError, match="non-empty string"):
        run_task(task, ctx, models=_roles())  # type: ignore[arg-type]
    assert not (ctx.workspace and __import__("pathlib").Path(ctx.workspace, "runs").exists())


def test_huge_task(ctx: Context) -> None:
    with pytest.raises(InvalidInputError, match=f"at most {MAX_TASK_CHARS}"):
        run_task("x" * (MAX_TASK_CHARS + 1), ctx, models=_roles())


def test_an_existing_run_id_is_not_reused(ctx: Context) -> None:
    assert run_task("t", ctx, models=_roles(), run_id="same").status == "done"
    with pytest.raises(InvalidInputError, match="already exists.*resume"):
        run_task("t", ctx, models=_roles(), run_id="same")


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "-x", "x" * 200])
def test_bad_run_ids(ctx: Context, run_id: str) -> None:
    with pytest.raises(WorkspaceError):
        run_task("t", ctx, models=_roles(), run_id=run_id)


def test_graph_input_without_task_fails_clearly(ctx: Context) -> None:
    graph = build_graph(Resources(ctx, models=_roles()))
    with pytest.raises(InvalidInputError, match="non-empty 'task'"):
        graph.invoke({"task": " "}, context=ctx)


def test_cli_empty_task(capsys: pytest.CaptureFixture[str], ctx: Context) -> None:
    assert main(["run", "", "--workspace", ctx.workspace]) == 2
    assert "the task must be a non-empty string" in capsys.readouterr().err
