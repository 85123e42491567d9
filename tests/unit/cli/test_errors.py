"""Every failure of the environment is a clear message (exit 2, the file named, the fix)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from atom_agent.workspace import Workspace

from .process import CLI, clean_error, cli, env_for

FACTORY = "tests.unit.graph.factory:two_slow_steps"


def _runs(ws: Path) -> list[str]:
    runs = ws / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_runs_list_skips_and_flags_an_unreadable_run_json(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.create_run("good", task="fine")
    bad = ws.create_run("bad", task="soon broken")
    bad.run_json.write_bytes(b"\xff\xfe{ not utf-8")
    listing = cli(tmp_path / "ws", "runs", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    rows = {r["run_id"]: r for r in json.loads(listing.stdout)}
    assert rows["good"]["status"] == "created"
    assert rows["bad"]["status"] == "unreadable"
    assert "not UTF-8" in rows["bad"]["problem"] and str(bad.run_json) in rows["bad"]["problem"]
    table = cli(tmp_path / "ws", "runs", "list")
    assert table.returncode == 0 and "unreadable" in table.stdout + table.stderr
    shown = cli(tmp_path / "ws", "runs", "show", "bad", "--json")
    clean_error(shown, str(bad.run_json), "is corrupt", "restore it")


def test_a_damaged_checkpoint_database_is_named_and_blocks_nothing_silently(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "checkpoints.sqlite").write_bytes(b"this is no database" * 300)
    done = cli(ws, "run", "two things", "--run-id", "r1", ATOM_MODELS_FACTORY=FACTORY)
    clean_error(done, str(ws / "checkpoints.sqlite"), "is damaged", "mv ")
    assert _runs(ws) == []  # nothing half-made


def test_a_damaged_memory_database_is_named(tmp_path: Path) -> None:
    memory = tmp_path / "ws" / "memory"
    memory.mkdir(parents=True)
    (memory / "chroma.sqlite3").write_bytes(b"\x00garbage" * 4096)
    clean_error(cli(tmp_path / "ws", "memory", "list"), str(memory / "chroma.sqlite3"), "damaged")


def test_a_workspace_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    target.write_text("a file")
    run = cli(target, "run", "two things", ATOM_MODELS_FACTORY=FACTORY)
    clean_error(run, str(target), "is a file")
    clean_error(cli(target, "memory", "list"), "is a file")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "a", "task": "x"}) + "\n")
    clean_error(cli(target, "batch", str(tasks), "--models-factory", FACTORY), "is a file")


def test_a_read_only_workspace(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here (needs root): {made.stderr!r}")
    try:
        run = cli(mount / "ws", "run", "two things", ATOM_MODELS_FACTORY=FACTORY)
        clean_error(run, str(mount), "not writable")
        clean_error(cli(mount / "ws", "memory", "list"), "read-only")
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_task_bytes_that_are_not_utf8_leave_nothing_behind(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    done = subprocess.run(
        [*CLI, "run", b"caf\xe9 au lait", "--run-id", "latin"],
        env=env_for(ws, ATOM_MODELS_FACTORY=FACTORY), capture_output=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "not valid UTF-8" in stderr
    assert _runs(ws) == []


def test_a_binary_import_file(tmp_path: Path) -> None:
    blob = tmp_path / "memories.bin"
    blob.write_bytes(bytes(range(256)) * 8)
    clean_error(
        cli(tmp_path / "ws", "memory", "import", str(blob)), str(blob), "not UTF-8", "export"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max-cost", "nan"], "max_cost_usd: nan is not a finite number"),
        (["--max-cost", "inf"], "max_cost_usd: inf is not a finite number"),
        (["--max-cost", "-1"], "max_cost_usd: -1.0 is out of range"),
        (["--max-seconds", "-5"], "max_wall_seconds: -5.0 is out of range"),
        (["--max-tokens", "-3"], "max_tokens: -3 is out of range"),
        (["--max-tool-calls", "-1"], "max_tool_calls: -1 is out of range"),
    ],
)
def test_non_finite_and_negative_limits_are_rejected(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    clean_error(cli(tmp_path / "ws", "run", "x", *args, ATOM_MODELS_FACTORY=FACTORY), expected)
    assert _runs(tmp_path / "ws") == []


def test_nan_from_the_environment_is_rejected(tmp_path: Path) -> None:
    done = cli(tmp_path / "ws", "run", "x", ATOM_MODELS_FACTORY=FACTORY, ATOM_MAX_COST_USD="nan")
    clean_error(done, "ATOM_MAX_COST_USD='nan'", "not a finite number")


def test_memory_list_with_a_negative_limit_is_an_error(tmp_path: Path) -> None:
    done = cli(tmp_path / "ws", "memory", "list", "--limit", "-5")
    assert done.returncode == 2 and "-5 must be at least 1" in done.stderr
    assert "no memories" not in done.stdout
