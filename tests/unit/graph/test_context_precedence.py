"""An explicit setting beats ATOM_* in every entry point, even when it equals the default."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.cli import main
from atom_agent.errors import AtomAgentError
from atom_agent.resources import Resources

from .factory import always_fails

OTHER_ENV = {
    "ATOM_MAX_ATTEMPTS": "5",
    "ATOM_PROJECT_ID": "env-project",
    "ATOM_APPROVE_PLAN": "true",
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ATOM_* set to values other than the explicit ones; the cwd is tmp_path."""
    monkeypatch.chdir(tmp_path)
    for name, value in OTHER_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ATOM_WORKSPACE", str(tmp_path / "env_ws"))
    yield tmp_path


def _attempts(run_dir: Path) -> int:
    return len(list((run_dir / "steps" / "adder" / "attempts").iterdir()))


def test_python_an_explicit_context_is_used_as_given(env: Path) -> None:
    ctx = Context(
        workspace="atom_workspace", max_attempts=3, project_id="default", approve_plan=False,
        max_replans=0, sandbox_timeout_s=30,
    )  # fmt: skip
    outcome = run_task("add", ctx, models=always_fails(), run_id="py")
    assert outcome.status == "failed"  # not interrupted: approve_plan=False held
    run_dir = env / "atom_workspace" / "runs" / "py"
    assert Path(outcome.run_dir).resolve() == run_dir
    assert _attempts(run_dir) == 3  # not ATOM_MAX_ATTEMPTS=5
    assert json.loads((run_dir / "run.json").read_text())["project_id"] == "default"
    assert not (env / "env_ws").exists()  # one run, one folder


def test_cli_options_beat_the_environment_and_the_rest_comes_from_it(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_MAX_REPLANS", "0")  # not given on the command line: env applies
    monkeypatch.setenv("ATOM_APPROVE_PLAN", "false")
    code = main(
        ["run", "add", "--max-attempts", "3", "--workspace", "atom_workspace",
         "--project", "default", "--run-id", "cli", "--json",
         "--models-factory", "tests.unit.graph.factory:always_fails"]
    )  # fmt: skip
    assert code == 1
    run_dir = env / "atom_workspace" / "runs" / "cli"
    assert _attempts(run_dir) == 3
    info = json.loads((run_dir / "run.json").read_text())
    assert info["project_id"] == "default" and info["status"] == "failed"
    plan = json.loads((run_dir / "plan.json").read_text())
    assert len(plan["revisions"]) == 1  # ATOM_MAX_REPLANS=0: no replan
    assert not (env / "env_ws").exists()


def test_server_context_sent_fields_win_and_the_rest_is_the_servers_env() -> None:
    schema = Context.with_env_defaults(
        {"ATOM_APPROVE_PLAN": "true", "ATOM_MAX_ATTEMPTS": "5", "ATOM_PROJECT_ID": "srv"}
    )
    left_out = schema()
    assert (left_out.approve_plan, left_out.max_attempts, left_out.project_id) == (True, 5, "srv")
    sent = schema(approve_plan=False, max_attempts=3, project_id="default")
    assert (sent.approve_plan, sent.max_attempts, sent.project_id) == (False, 3, "default")
    assert isinstance(sent, Context) and sent.replace(max_attempts=4).max_attempts == 4


def test_an_explicit_empty_chroma_url_means_the_embedded_store(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CHROMA_URL", "http://127.0.0.1:9")  # nothing listens there
    ctx = Context(workspace=str(env / "ws"), chroma_url="")
    with Resources(ctx) as res:
        assert res.memory.backend.url is None
        assert (env / "ws" / "memory").is_dir()
    # Left out, the environment applies (and that server cannot be reached).
    with pytest.raises(AtomAgentError, match="127.0.0.1:9"), Resources(Context.from_env()) as res:
        _ = res.memory
