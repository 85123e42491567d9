"""Exclusive locks on a run or a batch file, naming the holder (pid, host, command) when taken.

``flock`` on a lock file: the kernel releases it when the holder exits, however it exits
(SIGKILL included), so a lock is never stale; the holder's details written into the file are
only for the message another process shows.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from atom_agent.errors import EnvironmentFailure, LockedError

LOCKS_DIR = "locks"
"""Folder of the workspace that holds the per-run lock files."""


def run_lock_path(root: Path, run_id: str) -> Path:
    """The lock file of run `run_id` in the workspace at `root`."""
    return root / LOCKS_DIR / f"run-{run_id}.lock"


def batch_lock_path(results: Path) -> Path:
    """The lock file of a batch writing `results`."""
    return results.with_name(results.name + ".lock")


def holder_of(path: Path) -> dict[str, Any]:
    """What the holder of `path` wrote about itself ({} when unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "another process"
    command = str(holder.get("command", ""))[:200]
    return (
        f"process {holder.get('pid', '?')} on {holder.get('host', '?')}"
        + (f" ({command})" if command else "")
        + (f", since {holder['since']}" if holder.get("since") else "")
    )


@contextlib.contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created) for the block; `what` names it in messages.

    Raises:
        LockedError: another process (or another thread of this one) holds it; the message
            names the holder and the lock file.
        EnvironmentFailure: the lock file cannot be created (read-only or full disk).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror
        raise EnvironmentFailure(
            f"cannot create the lock file {path}: {reason}; use a writable workspace with "
            f"free space"
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockedError(
                f"{what} is in use by {_describe(holder_of(path))}: wait for it to finish or "
                f"stop it (lock file: {path})"
            ) from None
        _write_holder(fd)
        yield
    finally:
        os.close(fd)  # releases the flock


def _write_holder(fd: int) -> None:
    from datetime import UTC, datetime

    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": " ".join(sys.argv)[:500],
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    data = json.dumps(info).encode("utf-8", "replace")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:
        pass  # a full disk: the lock holds all the same; only the holder's details are missing
