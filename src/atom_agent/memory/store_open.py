"""Opening the embedded Chroma store safely: one first creation at a time, retries, clear errors.

Chroma creates its SQLite tables when a ``PersistentClient`` first opens a folder. Processes
opening one fresh folder at once raced in that set-up ("table collections already exists",
"database is locked"). Creation runs under a file lock beside the database, and what still
fails with a transient database error is retried; a damaged database is named with what to do.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import chromadb
from chromadb.config import Settings
from filelock import FileLock, Timeout

from atom_agent.errors import MemoryStoreError

logger = logging.getLogger(__name__)

T = TypeVar("T")

OPEN_LOCK_NAME = ".atom-open.lock"
"""The lock file, in the store's folder, that serialises first creation."""
OPEN_TIMEOUT_S = 120.0
"""How long an opener waits for another process's creation before it gives up."""
OPEN_ATTEMPTS = 6
"""Tries of a creation that failed with a transient database error."""
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TRANSIENT = ("already exists", "database is locked", "database table is locked", "busy")
_DAMAGED = ("not a database", "malformed", "file is encrypted", "disk image is malformed")


@contextlib.contextmanager
def open_lock(path: Path) -> Iterator[None]:
    """Hold the store's creation lock (other processes wait up to :data:`OPEN_TIMEOUT_S`)."""
    lock = FileLock(str(path / OPEN_LOCK_NAME))
    try:
        lock.acquire(timeout=OPEN_TIMEOUT_S)
    except Timeout:
        raise MemoryStoreError(
            f"the memory store {path} stayed locked by another process for {OPEN_TIMEOUT_S:.0f} "
            f"s ({path / OPEN_LOCK_NAME}): wait for it to finish, or stop it"
        ) from None
    try:
        yield
    finally:
        lock.release()


def damaged_message(path: Path, detail: object) -> str:
    """The message for a store whose database cannot be read."""
    return (
        f"the memory database {path / 'chroma.sqlite3'} is damaged ({detail}): move the folder "
        f"{path} aside (e.g. `mv {path} {path}.damaged`) and a fresh, empty store is made on the "
        f"next run; runs and checkpoints are kept. If you have an `atom-agent memory export`, "
        f"load it back with `atom-agent memory import FILE`"
    )


def check_not_damaged(path: Path) -> None:
    """Raise :class:`MemoryStoreError` when ``chroma.sqlite3`` exists and is no SQLite file."""
    db = path / "chroma.sqlite3"
    try:
        with open(db, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemoryStoreError(f"cannot read the memory database {db}: {exc}") from exc
    if head and head != _SQLITE_MAGIC:
        raise MemoryStoreError(damaged_message(path, "not an SQLite file"))


def with_store_retries(path: Path, what: str, action: Callable[[], T]) -> T:
    """Run `action` under the creation lock, retrying transient database errors.

    Raises:
        MemoryStoreError: the database is damaged, the folder cannot be written, or the
            error persists; the message names the folder and what to do.
    """
    delay = 0.05
    for attempt in range(1, OPEN_ATTEMPTS + 1):
        try:
            with open_lock(path):
                return action()
        except MemoryStoreError:
            raise
        except OSError as exc:
            raise MemoryStoreError(_os_message(path, what, exc)) from exc
        except Exception as exc:  # noqa: BLE001 - chromadb raises assorted errors for one cause
            text = str(exc).lower()
            if any(marker in text for marker in _DAMAGED):
                raise MemoryStoreError(damaged_message(path, exc)) from exc
            if "disk is full" in text or "no space" in text:
                raise MemoryStoreError(
                    f"cannot {what} in {path}: the disk is full ({exc}); free space and retry"
                ) from exc
            if "readonly" in text or "read-only" in text:
                raise MemoryStoreError(
                    f"cannot {what} in {path}: it is read-only ({exc}); use a writable --workspace"
                ) from exc
            if (free := free_kib(path)) is not None and free < LOW_SPACE_KIB:
                # Chroma reports a start cut short by a full disk in assorted ways (e.g. an
                # AttributeError of its half-built bindings): the free space says why.
                raise MemoryStoreError(
                    f"cannot {what} in {path}: the disk is full ({free} KiB free; {exc}); "
                    f"free space and retry"
                ) from exc
            if not any(marker in text for marker in _TRANSIENT) or attempt == OPEN_ATTEMPTS:
                raise MemoryStoreError(f"cannot {what} in {path}: {exc}") from exc
            logger.info("%s in %s failed (%s); retrying", what, path, exc)
            _forget_failed_system(path)
        time.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


LOW_SPACE_KIB = 1024
"""Below this much free space, a store that fails to open is taken to have hit a full disk."""


def free_kib(path: Path) -> int | None:
    """Free space for unprivileged writes on `path`'s file system, in KiB (None if unknown)."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize // 1024


def _os_message(path: Path, what: str, exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return f"cannot {what} in {path}: the disk is full; free space and retry"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"cannot {what} in {path}: {exc.strerror}; use a writable --workspace"
    return f"cannot {what} in {path}: {exc}"


def _forget_failed_system(path: Path) -> None:
    """Drop the half-started Chroma system of `path` that Chroma cached before starting it.

    ``SharedSystemClient`` registers a system under its folder before ``start()``; when start
    fails, the next client of that folder would get the broken one. (Private in Chroma; only
    this one folder's entry is dropped.)
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    systems: dict[str, Any] = SharedSystemClient._identifier_to_system
    with SharedSystemClient._refcount_lock:
        systems.pop(str(path), None)


def open_embedded(path: Path, settings: Settings) -> Any:
    """A ``PersistentClient`` on `path`, created safely against concurrent first opens.

    Raises:
        MemoryStoreError: the folder is not writable, the disk is full, or the database is
            damaged (the message says what to do).
    """
    if path.exists() and not path.is_dir():
        raise MemoryStoreError(
            f"the memory store {path} is a file, not a folder: move it aside or choose another "
            f"--workspace"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemoryStoreError(_os_message(path, "create the memory store", exc)) from exc
    check_not_damaged(path)
    return with_store_retries(
        path,
        "open the memory store",
        lambda: chromadb.PersistentClient(path=str(path), settings=settings),
    )
