"""The workspace's SQLite checkpointer opens safely from many threads and processes at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

from atom_agent.checkpoints import sqlite_checkpointer
from atom_agent.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]


def _open_at_once(root: Path, threads: int) -> list[BaseException]:
    workspace = Workspace(root)
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def open_one() -> None:
        barrier.wait()
        try:
            with sqlite_checkpointer(workspace) as saver:
                assert saver.get_tuple({"configurable": {"thread_id": "none"}}) is None
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    workers = [threading.Thread(target=open_one) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors


def test_batch_threads_opening_a_fresh_workspace_at_once_all_get_the_checkpointer(
    tmp_path: Path,
) -> None:
    # Without the set-up lock about one fresh workspace in fifteen raised "database is locked".
    errors = [e for trial in range(40) for e in _open_at_once(tmp_path / f"ws{trial}", 8)]

    assert errors == []
    with closing(sqlite3.connect(tmp_path / "ws0" / "checkpoints.sqlite")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_processes_opening_a_fresh_workspace_at_once_all_get_the_checkpointer(
    tmp_path: Path,
) -> None:
    script = (
        "import sys; from pathlib import Path\n"
        "from atom_agent.checkpoints import sqlite_checkpointer\n"
        "from atom_agent.workspace import Workspace\n"
        "with sqlite_checkpointer(Workspace(Path(sys.argv[1]))): pass\n"
    )
    for trial in range(3):
        root = tmp_path / f"ws{trial}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, str(root)],
                stderr=subprocess.PIPE,
                text=True,
                env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
            )
            for _ in range(4)
        ]
        outcomes = [(p.communicate(timeout=120)[1], p.returncode) for p in procs]
        assert [err for err, code in outcomes if code != 0] == []
