"""Atomic promotion of a staging directory to ``committed/artifacts`` (a symlink swap).

``committed/artifacts`` is a relative symlink to a hidden version directory
``committed/.attempt-<n>-<hex>/``. A commit copies staging into a fresh version directory,
fsyncs it, then replaces the symlink with ``os.replace`` — one atomic rename. Readers that go
through ``committed/artifacts/`` see the old version or the new one, never a half-copied tree; a
crash before the rename leaves the old version in place and only hidden leftovers, which the
next commit removes.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import uuid
from pathlib import Path

from atom_agent.errors import CommitError
from atom_agent.workspace.atomic import TEMP_PREFIX, durable, fsync_dir, fsync_file

logger = logging.getLogger(__name__)

ARTIFACTS = "artifacts"
_VERSION = re.compile(r"^\.attempt-(\d+)-[0-9a-f]+$")
_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache"})


def promote(staging: Path, committed: Path, attempt: int) -> Path:
    """Copy `staging` into a new version of `committed` and switch ``artifacts`` to it."""
    if not staging.is_dir():
        raise CommitError(f"nothing to commit: {staging} is not a directory")
    committed.mkdir(parents=True, exist_ok=True)
    link = committed / ARTIFACTS
    if link.exists() and not link.is_symlink():
        raise CommitError(f"{link} is a real directory, not a commit made by atom_agent")
    version = f".attempt-{attempt}-{uuid.uuid4().hex[:12]}"
    building = committed / f"{TEMP_PREFIX}{version.lstrip('.')}"
    _copy_tree(staging, building)
    os.replace(building, committed / version)
    fsync_dir(committed)
    tmp_link = committed / f"{TEMP_PREFIX}link-{uuid.uuid4().hex[:12]}"
    os.symlink(version, tmp_link)
    # The commit point: one rename replaces the old symlink with the new one.
    os.replace(tmp_link, link)
    fsync_dir(committed)
    _collect_garbage(committed, keep=version)
    return link


def current_attempt(committed: Path) -> int | None:
    """The attempt number ``committed/artifacts`` points at, or None when nothing is committed."""
    link = committed / ARTIFACTS
    try:
        target = os.readlink(link)
    except (FileNotFoundError, OSError):
        return None
    match = _VERSION.match(Path(target).name)
    return int(match.group(1)) if match and (committed / target).is_dir() else None


def _copy_tree(source: Path, dest: Path) -> None:
    """Copy the directories and regular files of `source` into a new directory `dest`.

    Symlinks and special files (written by generated code, they may point anywhere or block a
    reader) are skipped with a warning, and so are caches. Iterative: generated code may nest
    directories deeper than Python's recursion limit. Each directory is fsynced (when durable)
    after its entries are made.
    """
    dest.mkdir()
    pending = [(source, dest)]
    while pending:
        directory, copy = pending.pop()
        for entry in sorted(directory.iterdir()):
            mode = entry.lstat().st_mode
            target = copy / entry.name
            if stat.S_ISLNK(mode):
                logger.warning("commit: skipping symlink %s", entry)
            elif stat.S_ISDIR(mode):
                if entry.name not in _SKIP_DIRS:
                    target.mkdir()
                    pending.append((entry, target))
            elif stat.S_ISREG(mode):
                shutil.copy2(entry, target, follow_symlinks=False)
                if durable():
                    with open(target, "rb") as handle:
                        fsync_file(handle.fileno())
            else:
                logger.warning("commit: skipping special file %s", entry)
        fsync_dir(copy)


def _collect_garbage(committed: Path, *, keep: str) -> None:
    """Remove superseded versions and leftovers of crashed commits."""
    for entry in committed.iterdir():
        if entry.name in (ARTIFACTS, keep):
            continue
        if _VERSION.match(entry.name) or entry.name.startswith(TEMP_PREFIX):
            if entry.is_symlink() or entry.is_file():
                entry.unlink(missing_ok=True)
            else:
                shutil.rmtree(entry, ignore_errors=True)
