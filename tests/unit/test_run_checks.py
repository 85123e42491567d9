"""A missing API key or provider package fails a run at once, with the fix; never as advice."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.cli.process import clean_error, cli
from tests.unit.graph.scripts import ExecutorScript, models, passing_attempt, step

from atom_agent import Context, Resources, build_graph, run_task
from atom_agent.errors import ConfigError, MissingCredentialsError, ModelUnavailableError
from atom_agent.state import Plan
from atom_agent.workspace import Workspace


def test_cli_missing_key_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    done = cli(tmp_path / "ws", "run", "add two numbers", "--model", "google_genai:gemini-2.5-pro")
    clean_error(done, "GOOGLE_API_KEY or GEMINI_API_KEY", "--model")
    assert not (tmp_path / "ws" / "runs").exists()  # never "stuck at planning"


def test_cli_missing_provider_package_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    done = cli(tmp_path / "ws", "run", "add two numbers", "--model", "anthropic:claude-sonnet-4-5")
    clean_error(done, "pip install langchain-anthropic")
    assert not (tmp_path / "ws" / "runs").exists()


def _planner_only() -> dict[str, object]:
    """The planner scripted; the executor's model is left to load from the Context's spec."""
    roles = models([Plan(steps=[step("one")])], ExecutorScript({("one", 1): passing_attempt()}))
    return {"planner": roles["planner"]}


def test_a_role_without_its_key_is_found_before_the_run_starts(tmp_path: Path) -> None:
    ctx = Context(
        workspace=str(tmp_path / "ws"), executor_model="google_genai:gemini-2.5-pro",
        model_profile="standard",
    )  # fmt: skip
    roles = _planner_only()
    with pytest.raises(MissingCredentialsError) as info:
        run_task("add two numbers", ctx, models=roles)  # type: ignore[arg-type]
    assert isinstance(info.value, ConfigError) and "GOOGLE_API_KEY" in str(info.value)
    assert not (tmp_path / "ws" / "runs").exists()
    assert roles["planner"].calls == []  # type: ignore[attr-defined]


def test_config_errors_are_config_errors() -> None:
    assert issubclass(MissingCredentialsError, ConfigError)
    assert issubclass(ModelUnavailableError, ConfigError)


def test_a_graph_raises_a_missing_key_instead_of_advising_the_model(
    tmp_path: Path,
) -> None:
    # The graph without run_task's check (as a LangGraph server runs it): the executor's own
    # model cannot load. The run must stop with the fix, not become feedback for a replan.
    ctx = Context(
        workspace=str(tmp_path / "ws"), executor_model="google_genai:gemini-2.5-pro",
        model_profile="standard", sandbox_timeout_s=30, candidate_zero=False,
    )  # fmt: skip
    roles = _planner_only()
    graph = build_graph(Resources(ctx, models=roles))  # type: ignore[arg-type]
    with pytest.raises(MissingCredentialsError, match="GOOGLE_API_KEY"):
        graph.invoke({"task": "add two numbers", "run_id": "r1"}, context=ctx)
    planner = roles["planner"]
    assert planner.calls  # type: ignore[attr-defined]  # the run got as far as its plan
    assert not any(
        "API key" in str(m.content)
        for call in planner.calls  # type: ignore[attr-defined]
        for m in call.messages
    )
    ws = Workspace(ctx.workspace)
    attempts = ws.list_attempts(ws.step(ws.run("r1"), "one"))
    assert not any(a.verdict_json.exists() for a in attempts)  # no verdict, no retry
