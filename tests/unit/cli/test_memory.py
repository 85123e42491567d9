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


def test_add_a_rule_change_it_and_show_the_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    assert main(_cli(ws, "add", "Every public function logs its arguments at debug level.")) == 0
    first = capsys.readouterr().out
    assert first.startswith("remembered ") and "(convention)" in first
    old_id = first.split()[1]
    assert main(_cli(ws, "add", "Every public function logs its arguments at debug level.")) == 0
    assert f"already remembered as {old_id}: nothing written" in capsys.readouterr().out

    change = "Every public function logs its arguments at info level instead of debug level."
    assert main(_cli(ws, "add", change)) == 0
    out = capsys.readouterr().out
    new_id = out.split()[1]
    assert f"superseded {old_id} (replaced by {new_id})" in out
    assert main(_cli(ws, "show", new_id)) == 0
    shown = capsys.readouterr().out
    assert "source_type: user" in shown and "history (oldest first):" in shown
    assert shown.index(old_id) < shown.rindex(new_id)
    assert main(_cli(ws, "list", "--all")) == 0
    assert f"superseded by {new_id}: changed by the user (cli)" in capsys.readouterr().out
    assert main(_cli(ws, "add", "Deploys go through CI.", "--type", "fact")) == 0
    assert "(fact)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["add", "   "], "memory add: the text is empty"),
        (["add", "x" * 2001], "memory add: the text has 2001 characters, more than 2000"),
    ],
)
def test_add_refuses_bad_input_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    ws = tmp_path / "ws"
    assert main(_cli(ws, *args)) == 2
    err = capsys.readouterr().err
    assert error in err and len(err.strip().splitlines()) == 1
    assert not (ws / "memory").exists()  # the store was never opened


def test_add_refuses_an_unknown_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(_cli(tmp_path / "ws", "add", "Use pathlib.", "--type", "rule"))
    assert exit_.value.code == 2
    assert "invalid choice: 'rule'" in capsys.readouterr().err
