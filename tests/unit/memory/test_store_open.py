"""Opening the embedded memory store: concurrent first opens, damaged and misplaced stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from atom_agent.errors import MemoryStoreError
from atom_agent.memory.store import ChromaBackend

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


@pytest.mark.integration
def test_four_processes_opening_one_fresh_store_never_crash(tmp_path: Path) -> None:
    # Before the creation lock: 10 of 20 trials had a crash ("table collections already
    # exists", "database is locked").
    done = subprocess.run(
        [sys.executable, str(HERE / "open_race.py"), "20", "4", str(tmp_path)],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts == {"trials": 20, "crashed_trials": 0, "errors": []}


def test_a_damaged_memory_database_is_named_with_the_fix(tmp_path: Path) -> None:
    store = tmp_path / "ws" / "memory"
    store.mkdir(parents=True)
    (store / "chroma.sqlite3").write_bytes(b"\x00garbage" * 4096)
    with pytest.raises(MemoryStoreError) as info:
        ChromaBackend.open(tmp_path / "ws")
    text = str(info.value)
    assert str(store / "chroma.sqlite3") in text and "damaged" in text
    assert f"mv {store} {store}.damaged" in text


def test_a_truncated_sqlite_memory_database_is_named(tmp_path: Path) -> None:
    ChromaBackend.open(tmp_path / "ws").collection("memory", "p")
    db = tmp_path / "ws" / "memory" / "chroma.sqlite3"
    data = db.read_bytes()
    # Keep the SQLite header, destroy the pages behind it.
    db.write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # this process must reopen the file
    with pytest.raises(MemoryStoreError, match="is damaged"):
        ChromaBackend.open(tmp_path / "ws").collection("memory", "p")


def test_a_memory_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "memory").write_text("not a folder")
    with pytest.raises(MemoryStoreError, match="is a file, not a folder"):
        ChromaBackend.open(tmp_path / "ws")
