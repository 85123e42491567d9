"""Race-free confinement: open paths beneath a root through directory fds, never following out.

A path is checked and opened in one walk: each component is opened with ``O_NOFOLLOW``
relative to the directory fd held for its parent (``openat``), so generated code that flips a
directory to a symlink while a tool runs cannot redirect a read or a write outside the root.
A symlink met on the way is followed only by the walk itself, which keeps its target inside
the root (a relative target resolved against the directories the walk holds, an absolute one
only when it names a path under the root); a target that leaves the root is refused.

Regular files only: a FIFO, device or socket is refused before it is opened for reading, and
opened files are read non-blocking, through ``fstat`` and with a byte bound. Writes go to a
temp file created in the parent's fd and renamed over the name inside that same fd.

``openat2(RESOLVE_BENEATH)`` would do the walk in one syscall on Linux ≥ 5.6, but it refuses
absolute symlinks that stay inside (which the tools allow), needs a per-architecture syscall
number through ctypes, and container seccomp profiles may block it: the portable walk costs a
few syscalls per path component and has one behaviour everywhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from langchain_core.tools import ToolException

from atom_agent.workspace.atomic import TEMP_PREFIX, durable, write_and_close

MAX_SYMLINKS = 40
"""Symlinks one path may go through (the kernel's limit): more is a loop."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


def shown_name(name: str) -> str:
    r"""A file name safe to put in JSON for the model: undecodable bytes become ``\xNN``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        raw = name.encode("utf-8", "surrogateescape") if _escaped_only(name) else None
        if raw is not None:
            return raw.decode("utf-8", "backslashreplace")
        return name.encode("utf-8", "backslashreplace").decode("ascii")


def _escaped_only(name: str) -> bool:
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in name)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words for the model."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


@dataclass
class Located:
    """Where a path ends: the directory fd holding its last component, and that name.

    Attributes:
        dir_fd: an open fd of the parent directory (owned; :meth:`close` it).
        name: the last component, or None when the path names the root itself.
        parts: the resolved path relative to the root (links followed), for display.
    """

    dir_fd: int
    name: str | None
    parts: tuple[str, ...]

    def close(self) -> None:
        """Close the directory fd."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def lstat(self) -> os.stat_result | None:
        """The last component's stat without following it; None when it does not exist."""
        if self.name is None:
            return os.fstat(self.dir_fd)
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None


def open_root(root: Path) -> int:
    """An fd of the root directory (the root path itself is trusted: the workspace made it)."""
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise ToolException(
            f"the directory {str(root)!r} is not available: {exc.strerror}"
        ) from None


def locate(
    root: Path,
    parts: tuple[str, ...],
    shown: str,
    *,
    make_dirs: bool = False,
) -> Located:
    """Walk `parts` beneath `root` component by component with ``O_NOFOLLOW`` dir fds.

    Args:
        root: the directory the path must stay inside.
        parts: the path's components (already free of '..', see ``split_path``).
        shown: the path as the model gave it, for messages.
        make_dirs: create missing parent directories (for writes).

    Raises:
        ToolException: the path leaves the root, goes through a file or a symlink loop, or a
            parent does not exist (without `make_dirs`).
    """
    descent = _Descent(open_root(root), shown, _root_prefixes(root), parts)
    try:
        while descent.todo:
            part = descent.todo.pop()
            if part in ("", "."):
                continue
            if part == "..":  # only from a symlink's target: step back to a held directory
                descent.step_back()
            elif not descent.todo:  # the last component
                located = descent.last(part)
                if located is not None:
                    return located
            else:
                descent.enter(part, make_dirs=make_dirs)
        return Located(descent.stack.pop(), None, tuple(descent.names))
    except OSError as exc:  # ENAMETOOLONG from a link target, EACCES, EIO …
        raise ToolException(f"cannot open {shown!r}: {exc.strerror or exc}") from None
    finally:
        descent.close()


class _Descent:
    """The state of one :func:`locate` walk: the directory fds it holds and what is left."""

    def __init__(
        self, root_fd: int, shown: str, prefixes: list[tuple[str, ...]], parts: tuple[str, ...]
    ) -> None:
        self.shown = shown
        self.prefixes = prefixes
        self.stack: list[int] = [root_fd]  # held directory fds; the last one is where it is
        self.names: list[str] = []  # the component names of stack[1:]
        self.todo = list(reversed(parts))
        self.links = 0

    def unwind_to_root(self) -> None:
        """Close every held directory but the root: an absolute link target starts there."""
        while len(self.stack) > 1:
            os.close(self.stack.pop())
        self.names.clear()

    def follow(self, target: str) -> None:
        """Queue a symlink's target in place of the link; one leaving the root is refused."""
        self.links += 1
        if self.links > MAX_SYMLINKS:
            raise ToolException(
                f"{self.shown!r} goes through a symlink loop (more than {MAX_SYMLINKS} links); "
                f"remove the looping symlink or use another path"
            )
        pieces = [p for p in target.split("/") if p not in ("", ".")]
        if target.startswith("/"):
            for prefix in self.prefixes:
                if tuple(pieces[: len(prefix)]) == prefix:
                    pieces = pieces[len(prefix) :]
                    break
            else:
                raise _escape(self.shown)
            self.unwind_to_root()
        self.todo.extend(reversed(pieces))

    def step_back(self) -> None:
        """Go up to the held parent directory; above the root is an escape."""
        if len(self.stack) == 1:
            raise _escape(self.shown)
        os.close(self.stack.pop())
        self.names.pop()

    def last(self, part: str) -> Located | None:
        """Where the path ends at its last component; None when that was a link now followed."""
        here = self.stack[-1]
        info = _lstat(here, part)
        if info is not None and stat.S_ISLNK(info.st_mode):  # followed, kept inside
            self.follow(os.readlink(part, dir_fd=here))
            return None
        return Located(self.stack.pop(), part, (*self.names, part))

    def enter(self, part: str, *, make_dirs: bool) -> None:
        """Open the directory `part` (made when missing and `make_dirs`) or follow its link."""
        here = self.stack[-1]
        fd: int | None
        try:
            fd = os.open(part, _DIR_FLAGS, dir_fd=here)
        except FileNotFoundError:
            if not make_dirs:
                raise ToolException(
                    f"{self.shown!r} does not exist; list_files shows the files you can read"
                ) from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=here)
            fd = _open_dir_or_link(here, part, self.shown, self.names, self.follow)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            fd = _open_dir_or_link(here, part, self.shown, self.names, self.follow)
        if fd is None:
            return
        self.stack.append(fd)
        self.names.append(part)

    def close(self) -> None:
        """Close the directory fds still held (a returned :class:`Located` owns its own)."""
        for fd in self.stack:
            os.close(fd)


def _open_dir_or_link(
    here: int, part: str, shown: str, names: list[str], follow: Callable[[str], None]
) -> int | None:
    """Open `part` as a directory; a symlink is handed to `follow` (None returned)."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=here)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
            raise
    info = _lstat(here, part)
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            follow(os.readlink(part, dir_fd=here))
            return None
        except OSError:
            pass  # flipped back meanwhile: report it as changed
    where = "/".join(shown_name(n) for n in (*names, part))
    if info is None:
        raise ToolException(f"{shown!r} changed while it was opened; try again")
    raise ToolException(
        f"{shown!r} does not exist and cannot be created: {where!r} is "
        f"{_noun(info.st_mode)}, not a directory"
    )


def _noun(mode: int) -> str:
    return "a file" if stat.S_ISREG(mode) else kind_of(mode)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _root_prefixes(root: Path) -> list[tuple[str, ...]]:
    """The root's absolute path as given and resolved: absolute link targets may start so."""
    given = tuple(p for p in str(root.absolute()).split("/") if p)
    real = tuple(p for p in os.path.realpath(root).split("/") if p)
    return [given] if given == real else [given, real]


def _escape(shown: str) -> ToolException:
    return ToolException(
        f"{shown!r} leaves the allowed area (a symlink points outside it); only your "
        f"staging area and dependency artifacts are reachable"
    )


# --- reading --------------------------------------------------------------------------------------


def read_regular(where: Located, shown: str, limit: int) -> bytes:
    """The bytes of the regular file at `where`: at most `limit`, never from a special file.

    Raises:
        ToolException: missing, a directory, a FIFO/device/socket, larger than `limit`, or
            swapped for something else while it was opened.
    """
    if where.name is None:
        raise ToolException(f"{shown!r} is a directory; use list_files to see inside it")
    return read_at(where.dir_fd, where.name, shown, limit)


def read_at(dir_fd: int, name: str, shown: str, limit: int) -> bytes:
    """:func:`read_regular` of `name` in the directory `dir_fd` (the name is not followed)."""
    info = _lstat(dir_fd, name)
    if info is None:
        raise ToolException(f"{shown!r} does not exist; list_files shows the files you can read")
    _require_regular(info.st_mode, shown)  # checked before opening: a device is never opened
    if info.st_size > limit:
        raise ToolException(
            f"{shown!r} is {info.st_size} bytes, too large to read (limit {limit}); use "
            f"search_files to find the lines you need"
        )
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise ToolException(f"{shown!r} changed while it was opened; try again") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolException(f"{shown!r} changed while it was opened; try again") from None
        raise ToolException(f"cannot read {shown!r}: {exc.strerror}") from None
    try:
        _require_regular(os.fstat(fd).st_mode, shown)  # what was opened, not what was checked
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ToolException(f"cannot read {shown!r}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ToolException(f"{shown!r} grew past {limit} bytes while it was read; try again")
    return data


def _require_regular(mode: int, shown: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ToolException(f"{shown!r} is a directory; use list_files to see inside it")
    raise ToolException(
        f"{shown!r} is {kind_of(mode)}, not a regular file (device, pipe or socket); file "
        f"tools only read and write regular files: use another name"
    )


# --- writing --------------------------------------------------------------------------------------


def write_atomic(where: Located, data: bytes, shown: str) -> None:
    """Replace (or create) the file at `where` with `data` via a temp file and a rename.

    Both happen inside the parent's fd, so the write lands where the walk checked.
    """
    if where.name is None:
        raise ToolException(f"{shown!r} is a directory; choose a file name inside it")
    tmp = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    try:
        fd = os.open(tmp, _TEMP_FLAGS, 0o644, dir_fd=where.dir_fd)
    except OSError as exc:
        raise ToolException(f"cannot write {shown!r}: {exc.strerror}") from None
    try:
        write_and_close(fd, data)
        os.rename(tmp, where.name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=where.dir_fd)
        if isinstance(exc, IsADirectoryError | NotADirectoryError):
            raise ToolException(f"{shown!r} is a directory; choose a file name inside it") from None
        if isinstance(exc, OSError):
            raise ToolException(f"cannot write {shown!r}: {exc.strerror or exc}") from None
        raise
    if durable():
        os.fsync(where.dir_fd)


# --- walking --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A regular file met by :func:`walk`, valid while the walk is at it.

    Attributes:
        dir_fd: its directory's fd (open only until the walk moves on).
        name: its name in that directory.
        parts: its path relative to the walk's start.
        size: its size in bytes.
    """

    dir_fd: int
    name: str
    parts: tuple[str, ...]
    size: int


@dataclass
class WalkLimits:
    """Bounds of one :func:`walk`, and what it ran into.

    Attributes:
        max_depth: deepest directory level entered.
        max_scanned: most directory entries looked at in all.
        scanned: entries looked at so far.
        cut: why the walk stopped early (None: it saw everything).
    """

    max_depth: int = 64
    max_scanned: int = 20_000
    scanned: int = 0
    cut: str | None = None


def walk(start: Located, limits: WalkLimits, skip_dirs: frozenset[str]) -> Iterator[Entry]:
    """Regular files under the directory at `start`, depth-first, sorted, iteratively.

    Symlinks are not followed (a listing never leaves the tree through one), names starting
    with the temp prefix and `skip_dirs` are skipped, and the walk stops at `limits`.
    """
    if start.name is None:
        first = os.dup(start.dir_fd)
    else:
        try:
            first = os.open(start.name, _DIR_FLAGS, dir_fd=start.dir_fd)
        except OSError:
            return
    base = start.parts
    frames: list[tuple[int, tuple[str, ...], Iterator[str]]] = []
    fd = first
    rel: tuple[str, ...] = ()
    try:
        while True:
            frames.append((fd, rel, iter(())))  # owned from here on: closed in `finally`
            subdirs, files = _scan(fd, limits, skip_dirs)
            frames[-1] = (fd, rel, iter(sorted(subdirs)))
            for name, size in sorted(files):
                yield Entry(fd, name, (*base, *rel, name), size)
            if limits.cut:
                return
            fd = -1
            while frames and fd < 0:
                parent, prel, pending = frames[-1]
                subdir = next(pending, None)
                if subdir is None:
                    frames.pop()
                    os.close(parent)
                    continue
                if len(prel) + 1 > limits.max_depth:
                    limits.cut = f"directories deeper than {limits.max_depth} levels are not listed"
                    continue
                try:
                    fd = os.open(subdir, _DIR_FLAGS, dir_fd=parent)
                except OSError:
                    continue  # gone, or swapped for a link meanwhile: not followed
                rel = (*prel, subdir)
            if fd < 0:
                return
    finally:
        for parent, _, _ in frames:
            os.close(parent)


def _scan(
    fd: int, limits: WalkLimits, skip_dirs: frozenset[str]
) -> tuple[list[str], list[tuple[str, int]]]:
    """The subdirectories and regular files (with sizes) of the directory `fd`."""
    subdirs: list[str] = []
    files: list[tuple[str, int]] = []
    try:
        entries = os.scandir(fd)
    except OSError:
        return subdirs, files
    with entries:
        for entry in entries:
            limits.scanned += 1
            if limits.scanned > limits.max_scanned:
                limits.cut = f"stopped after looking at {limits.max_scanned} entries"
                break
            if entry.name.startswith(TEMP_PREFIX):
                continue
            try:
                info = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode) and entry.name not in skip_dirs:
                subdirs.append(entry.name)
            elif stat.S_ISREG(info.st_mode):
                files.append((entry.name, info.st_size))
    return subdirs, files
