from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atom_agent import __version__
from atom_agent.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"atom-agent {__version__}"


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: atom-agent" in capsys.readouterr().out


def test_models_json_explains_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    providers = {p["provider"]: p for p in payload["providers"]}
    assert set(providers) >= {"local", "google_genai", "openai", "anthropic", "ollama"}
    assert providers["google_genai"]["usable"] is False
    assert "GOOGLE_API_KEY" in providers["google_genai"]["detail"]
    if providers["local"]["usable"]:
        assert payload["default"]["spec"] == "local"
        assert "no GOOGLE_API_KEY" in payload["default"]["reason"]


def test_models_prefers_gemini_when_keyed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert main(["models", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["default"]["spec"] == "google_genai:gemini-2.5-pro"
    google = next(p for p in payload["providers"] if p["provider"] == "google_genai")
    assert google["usable"] and google["detail"] == "GEMINI_API_KEY is set"


def test_models_bad_model_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--model", "gemini", "--check"]) == 1
    out = capsys.readouterr().out
    assert "not provider:model" in out


def test_console_script_and_module_entry_points() -> None:
    script = Path(sys.executable).parent / "atom-agent"
    for argv in ([str(script), "--version"], [sys.executable, "-m", "atom_agent.cli", "--version"]):
        done = subprocess.run(argv, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"atom-agent {__version__}"
