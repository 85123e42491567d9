"""Atomic file writes: temp file in the same directory, `os.replace`; fsync when durable.

Atomicity (a reader, or a process that crashed mid-write, sees the old file or the new one,
never a mix) always holds: it comes from the rename. Durability across a power loss needs
fsync of the file and its directory, which costs milliseconds per write on most disks; it is
on with ``ATOM_FSYNC=1``. Off by default, the same trade-off as the SQLite checkpointer in WAL
mode with ``synchronous=NORMAL``: after a power cut the last writes may be missing, but
nothing is ever torn.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from pathlib import Path
from typing import Any

TEMP_PREFIX = ".tmp-"
"""Prefix of in-flight temp files; readers and listings ignore names starting with it."""

_COUNTER = itertools.count()


def durable() -> bool:
    """Whether writes are fsynced (``ATOM_FSYNC=1``)."""
    return os.environ.get("ATOM_FSYNC", "").strip().lower() in ("1", "true", "yes", "on")


def fsync_file(fd: int) -> None:
    """Flush a file's data to disk when durable."""
    if durable():
        os.fsync(fd)


def write_and_close(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd`, flush it when durable, and close the fd (always)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fsync_file(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a directory entry (so a rename inside it survives a power loss) when durable."""
    if not durable():
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so a reader sees the old file or the new one, never a mix.

    The temp file lives in the same directory (``os.replace`` is atomic only within one
    filesystem), named after this process, thread and a counter, so concurrent writers never
    share one. A crash before the rename leaves the old file intact and a ``.tmp-*`` file
    behind, which :func:`clean_temp_files` removes.
    """
    tmp = path.parent / (
        f"{TEMP_PREFIX}{path.name}.{os.getpid()}.{threading.get_ident()}.{next(_COUNTER)}"
    )
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileNotFoundError:  # the directory does not exist yet
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o644)
    try:
        write_and_close(fd, data)
        os.replace(tmp, path)
    except BaseException:
        # Only a failure in this process gets here; a SIGKILL leaves the temp file (harmless).
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    r""":func:`atomic_write_bytes` for UTF-8 text (a lone surrogate as its escape, ``\udc80``)."""
    atomic_write_bytes(path, text.encode("utf-8", "backslashreplace"))


def atomic_write_json(path: Path, payload: Any) -> None:
    r"""Write `payload` as indented UTF-8 JSON atomically.

    A lone surrogate (a model's ``"\ud800"`` in a tool call) cannot be encoded as UTF-8:
    such a payload is written with JSON escapes instead, which read back as the same string.
    """
    text = json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=False)
    try:
        data = (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        data = (json.dumps(payload, indent=2, ensure_ascii=True) + "\n").encode("ascii")
    atomic_write_bytes(path, data)


def clean_temp_files(directory: Path) -> list[Path]:
    """Remove temp files a crashed writer left in `directory`; returns what was removed."""
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        if entry.name.startswith(TEMP_PREFIX) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
