"""`atom-agent memory` over a workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atom_agent.cli import main


def _cli(ws: Path, *args: str) -> list[str]:
    return ["memory", "--workspace", str(ws), "--project", "demo", *args]


def test_import_list_recall_show_forget_export_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    source = tmp_path / "in.json"
    source.write_text(
        json.dumps(
            [
                {"content": "The tests use pytest", "type": "convention"},
                {"content": "Deploys go through GitHub Actions", "confidence": 0.9},
            ]
        )
    )
    assert main(_cli(ws, "import", str(source))) == 0
    assert "imported 2 memories" in capsys.readouterr().out

    assert main(_cli(ws, "--json", "list")) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["content"] for r in listed} == {
        "The tests use pytest",
        "Deploys go through GitHub Actions",
    }

    assert main(_cli(ws, "--json", "recall", "which test runner")) == 0
    recalled = json.loads(capsys.readouterr().out)
    assert recalled[0]["content"] == "The tests use pytest"
    pytest_id = recalled[0]["id"]

    assert main(_cli(ws, "forget", pytest_id, "--reason", "moved to tox")) == 0
    assert f"forgot {pytest_id}" in capsys.readouterr().out
    assert main(_cli(ws, "show", pytest_id)) == 0
    shown = capsys.readouterr().out
    assert "supersede_reason: moved to tox" in shown and "The tests use pytest" in shown

    assert main(_cli(ws, "list")) == 0
    assert "The tests use pytest" not in capsys.readouterr().out
    assert main(_cli(ws, "list", "--all")) == 0
    assert "[forgotten]" in capsys.readouterr().out

    out = tmp_path / "out.json"
    assert main(_cli(ws, "export", "-o", str(out))) == 0
    assert len(json.loads(out.read_text())) == 2
    assert main(_cli(ws, "sweep")) == 0
    assert "swept 0 expired memories" in capsys.readouterr().out


def test_other_project_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    assert main(["memory", "--workspace", str(ws), "--project", "elsewhere", "show", "abc"]) == 2
    assert "memory 'abc' not found in this project" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    assert main(_cli(ws, "import", str(bad))) == 2
    assert "expected a JSON list of records" in capsys.readouterr().err
    assert main(_cli(ws, "list")) == 0
    assert "no memories" in capsys.readouterr().out
