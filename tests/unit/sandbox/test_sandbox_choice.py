"""Which runner generated code gets, and what `atom-agent doctor` / `models` say about it."""

from __future__ import annotations

import json

import pytest

from atom_agent.cli import main
from atom_agent.errors import SandboxUnavailableError
from atom_agent.sandbox import (
    BubblewrapRunner,
    SubprocessRunner,
    choice,
    default_runner,
    probe_bubblewrap,
    sandbox_status,
)


def test_default_runner_is_bubblewrap_exactly_when_it_works() -> None:
    runner = default_runner()
    if probe_bubblewrap().usable:
        assert isinstance(runner, BubblewrapRunner) and runner.kind == "bubblewrap"
        assert sandbox_status().runner == "bubblewrap"
    else:
        assert type(runner) is SubprocessRunner
        assert "bubblewrap unusable" in sandbox_status().reason


def test_without_bwrap_on_path_the_namespace_runner_is_chosen_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    missing = probe_bubblewrap.__wrapped__()  # a real probe, uncached, with no bwrap to find
    assert not missing.usable and "bwrap not installed" in missing.reason
    monkeypatch.setattr(choice, "probe_bubblewrap", lambda: missing)
    with caplog.at_level("WARNING"):
        runner = default_runner()
    assert type(runner) is SubprocessRunner
    assert "using the namespace runner (bwrap not installed" in caplog.text
    status = sandbox_status()
    assert status.runner == "namespaces" and "apt-get install bubblewrap" in status.reason
    assert any("remount" in gap for gap in status.gaps)
    monkeypatch.setattr("atom_agent.sandbox.bubblewrap.probe_bubblewrap", lambda: missing)
    with pytest.raises(SandboxUnavailableError, match="bwrap not installed"):
        BubblewrapRunner()  # asked for explicitly, where it cannot run: a clear error


def test_doctor_runs_code_in_the_active_sandbox(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["sandbox"]["runner"] in ("bubblewrap", "namespaces")
    assert payload["sandbox"]["gaps"], "the doctor must say what is not covered"
    check = payload["check"]
    assert check["ok"] is True and check["sandbox"] == payload["sandbox"]["runner"]
    if payload["sandbox"]["runner"] == "bubblewrap":
        assert check["uid_inside"] != 0 and check["interfaces"] == ["lo"]
        assert "home" not in check["root_listing"] and "run" not in check["root_listing"]


def test_doctor_text_and_models_name_the_sandbox(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--no-check"]) == 0
    text = capsys.readouterr().out
    assert "Sandbox:" in text and "Does not cover:" in text
    assert main(["models", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["sandbox"]["runner"] == sandbox_status().runner
