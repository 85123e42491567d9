"""The workspace's SQLite checkpoint database, opened safely beside other threads and processes."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from atom_agent.environment import environment_failure
from atom_agent.errors import EnvironmentFailure, WorkspaceError
from atom_agent.workspace import Workspace

__all__ = ["SETUP_TIMEOUT_S", "checkpoint_failure", "sqlite_checkpointer"]

_SETUP_LOCK = threading.Lock()
"""Serialises the checkpoint database's first set-up among this process's threads."""

SETUP_TIMEOUT_S = 30.0
"""How long opening the checkpoint database waits for other processes before it gives up."""

_DAMAGED = ("file is not a database", "malformed", "file is encrypted")
"""What SQLite says of a file that is not (or no longer) a checkpoint database."""


@contextmanager
def sqlite_checkpointer(workspace: Workspace) -> Iterator[SqliteSaver]:
    """The workspace's SQLite checkpointer (WAL, synchronous=NORMAL), closed on exit.

    Switching a new database to WAL takes an exclusive lock that SQLite does not wait for
    (the busy timeout does not cover it), so batch threads opening one fresh workspace at
    once got "database is locked". The switch and the table set-up run under a process
    lock, and are retried for a while against other processes.
    """
    path = workspace.checkpoints_path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=SETUP_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise checkpoint_failure(path, exc) from exc
    try:
        saver = SqliteSaver(conn)
        with _SETUP_LOCK:
            try:
                _retry_locked(lambda: _set_up(conn, saver))
            except sqlite3.Error as exc:
                raise checkpoint_failure(path, exc) from exc
        yield saver
    finally:
        conn.close()


def _set_up(conn: sqlite3.Connection, saver: SqliteSaver) -> None:
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    saver.setup()


def _retry_locked(action: Callable[[], None]) -> None:
    """Run `action`, retrying while SQLite says the database is locked (up to the timeout)."""
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    delay = 0.01
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def checkpoint_failure(path: Path, exc: sqlite3.Error) -> WorkspaceError:
    """The error for a checkpoint database that cannot be opened, with what to do."""
    text = str(exc).lower()
    if any(marker in text for marker in _DAMAGED):
        return EnvironmentFailure(
            f"the checkpoint database {path} is damaged ({exc}): move it aside "
            f"(`mv {path} {path}.damaged`); new runs then work, and runs that were in "
            f"progress can no longer be resumed (their committed steps stay in runs/)"
        )
    found = environment_failure(exc)
    if found is not None:
        return EnvironmentFailure(f"cannot open the checkpoint database {path}: {found}")
    return EnvironmentFailure(f"cannot open the checkpoint database {path}: {exc}")
