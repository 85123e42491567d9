"""Failures of the machine (full disk, read-only or wrong paths, damaged files) as clear errors.

A run's code and the CLI call :func:`check_workspace` before they write anything, and turn an
``OSError`` / ``sqlite3.Error`` that escapes a run into an :class:`EnvironmentFailure` that names
the file and says what to do (:func:`environment_failure`).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from atom_agent.errors import EnvironmentFailure

_FULL = ("database or disk is full", "no space left on device", "disk is full")
_READ_ONLY = ("attempt to write a readonly database", "read-only file system")
_DAMAGED = ("file is not a database", "database disk image is malformed", "file is encrypted")


def cache_root() -> Path:
    """Where rebuildable files live (weights, the optimised embedder).

    ``$ATOM_CACHE_DIR``, else ``$XDG_CACHE_HOME/atom-agent`` (``~/.cache/atom-agent``).
    """
    base = os.environ.get("ATOM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "atom-agent"
    )
    return Path(base)


def check_workspace(root: Path, what: str = "the workspace") -> None:
    """Fail early, with the fix, when the workspace cannot hold runs.

    Raises:
        EnvironmentFailure: `root` (or a parent) is a file, or the folder is not writable.
    """
    for candidate in (root, *root.parents):
        if candidate.exists():
            if not candidate.is_dir():
                raise EnvironmentFailure(
                    f"{what} {root} cannot be created: {candidate} is a file, not a "
                    f"folder; choose another path (--workspace / ATOM_WORKSPACE, --out)"
                )
            if not os.access(candidate, os.W_OK | os.X_OK):
                raise EnvironmentFailure(
                    f"{what} {root} is not writable ({candidate} is read-only for this "
                    f"user or on a read-only filesystem); choose a writable path"
                )
            break
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentFailure(describe_os_error(exc, f"create {what} {root}")) from exc


def check_results_path(path: Path) -> None:
    """Fail early when a batch's results file cannot be written where it is asked for.

    Raises:
        EnvironmentFailure: the path is a folder, or its folder cannot be created or written.
    """
    if path.is_dir():
        raise EnvironmentFailure(f"the results file {path} is a folder; pass a file with --out")
    check_workspace(path.parent, "the results folder")


def describe_os_error(exc: OSError, doing: str = "") -> str:
    """`exc` as a sentence naming the file and the fix."""
    where = exc.filename if exc.filename is not None else ""
    what = f"cannot {doing}" if doing else f"cannot write {where}" if where else "I/O failed"
    if where and doing:
        what += f" ({where})"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{what}: the disk is full; free space and try again"
    if exc.errno == errno.EROFS:
        return f"{what}: the filesystem is read-only; use a writable --workspace"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{what}: permission denied; use a --workspace this user may write"
    if exc.errno == errno.ENOTDIR:
        return f"{what}: a path component is a file, not a folder; check --workspace"
    return f"{what}: {exc.strerror or exc}"


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what caused it (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _kind(exc: BaseException) -> str | None:
    """'full', 'read_only', 'damaged' or 'os' when `exc` (or what caused it) is environmental."""
    for current in causes(exc):
        text = str(current).lower()
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        if any(marker in text for marker in _FULL):
            return "full"
        if isinstance(current, OSError) and current.errno == errno.EROFS:
            return "read_only"
        if any(marker in text for marker in _READ_ONLY):
            return "read_only"
        if isinstance(current, sqlite3.DatabaseError) and any(m in text for m in _DAMAGED):
            return "damaged"
        if isinstance(current, OSError) and not isinstance(
            current, (TimeoutError, ConnectionError)
        ):
            return "os"
    return None


def environment_failure(
    exc: BaseException, *, run_id: str | None = None
) -> EnvironmentFailure | None:
    """An :class:`EnvironmentFailure` for `exc` when the machine caused it, else None.

    Args:
        exc: what escaped the run.
        run_id: the run it stopped, so the message can say how to continue it.
    """
    kind = _kind(exc)
    if kind is None:
        return None
    then = f", then continue with `atom-agent resume {run_id}`" if run_id else ""
    stopped = f"run {run_id!r} stopped: " if run_id else ""
    os_error = next((e for e in causes(exc) if isinstance(e, OSError)), None)
    where = f" ({os_error.filename})" if os_error is not None and os_error.filename else ""
    if kind == "full":
        return EnvironmentFailure(f"{stopped}the disk is full{where}: free space{then}")
    if kind == "read_only":
        return EnvironmentFailure(
            f"{stopped}a file could not be written{where}: read-only ({exc}); make the "
            f"workspace writable{then}"
        )
    if kind == "damaged":
        return EnvironmentFailure(f"{stopped}a database is damaged: {exc}")
    assert os_error is not None
    return EnvironmentFailure(f"{stopped}{describe_os_error(os_error)}{then}")
