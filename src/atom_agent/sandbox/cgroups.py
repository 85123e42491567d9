"""A memory and process limit for a run's whole process tree: one cgroup per run.

cgroup v1 (a ``memory`` and a ``pids`` hierarchy) or v2 (one unified hierarchy), created below
the cgroup this process is in (so the run stays inside whatever limits this process has),
where that directory is writable. The run's first process joins the cgroup before it forks
anything: the command is wrapped in ``/bin/sh -c 'echo $$ > cgroup.procs … exec "$@"'``,
so every descendant is born inside it. Where no cgroup can be made, runs keep their
per-process rlimits only (``RLIMIT_AS``; ``RLIMIT_NPROC`` for non-root users).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import signal
import time
import uuid
from pathlib import Path

logger = logging.getLogger(__name__)

_ROOT = Path("/sys/fs/cgroup")
_PREFIX = "atom-agent-"
_SH = "/bin/sh"
# Joins every cgroup given as an argument before the command: `sh -c JOIN sh PROCS… -- CMD…`.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclasses.dataclass(frozen=True)
class CgroupSupport:
    """Which cgroup hierarchy runs can be limited with here, or why none.

    Attributes:
        version: ``"v1"``, ``"v2"`` or None (no usable cgroup).
        parents: where per-run cgroups are made (v1: the memory and the pids directory).
        reason: why this choice (what was tried and failed, when ``version`` is None).
    """

    version: str | None
    parents: tuple[Path, ...]
    reason: str

    @property
    def usable(self) -> bool:
        """A per-run cgroup can be made."""
        return self.version is not None


def _own_path(controller: str) -> str | None:
    """This process's cgroup path in the hierarchy of `controller` ('' = the v2 unified one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller == "" and names == "") or controller in names.split(","):
            return path
    return None


def _writable_dir(parent: Path) -> str | None:
    """None when a child cgroup can be made (and removed) in `parent`, else why not."""
    probe = parent / f"{_PREFIX}probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        return f"cannot make a cgroup in {parent}: {exc.strerror}"
    return None


@functools.cache
def probe_cgroups() -> CgroupSupport:
    """Find a cgroup hierarchy this process can make per-run groups in (probed once)."""
    reasons: list[str] = []
    memory, pids = _ROOT / "memory", _ROOT / "pids"
    if (memory / "memory.limit_in_bytes").exists() and pids.is_dir():
        parents = []
        for controller, mount in (("memory", memory), ("pids", pids)):
            own = _own_path(controller)
            parents.append(mount / (own or "/").lstrip("/"))
        problems = [p for p in map(_writable_dir, parents) if p]
        if not problems:
            for parent in parents:
                _sweep(parent)
            return CgroupSupport("v1", tuple(parents), "cgroup v1 memory + pids, one group a run")
        reasons += problems
    if (_ROOT / "cgroup.controllers").exists():
        own = _own_path("")
        parent = _ROOT / (own or "/").lstrip("/")
        problem = _v2_parent_problem(parent)
        if problem is None:
            _sweep(parent)
            return CgroupSupport("v2", (parent,), "cgroup v2 memory + pids, one group a run")
        reasons.append(problem)
    if not reasons:
        reasons.append("no cgroup v1 memory/pids or v2 hierarchy mounted at /sys/fs/cgroup")
    why = "; ".join(reasons)
    logger.warning("sandbox: no per-run cgroup (%s); per-process rlimits only", why)
    return CgroupSupport(None, (), why)


def _sweep(parent: Path) -> None:
    """Remove the per-run cgroups that killed agent processes left in `parent` (empty now)."""
    try:
        with os.scandir(parent) as listing:
            names = [e.name for e in listing if e.name.startswith(_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or Path(f"/proc/{pid}").exists():
            continue  # a probe, ours, or its agent is still alive
        try:
            (parent / name).rmdir()
        except OSError:
            pass


def _v2_parent_problem(parent: Path) -> str | None:
    """None when `parent` delegates memory and pids to a child group we can make."""
    try:
        available = (parent / "cgroup.controllers").read_text(encoding="ascii").split()
    except OSError as exc:
        return f"cgroup v2 at {parent} unreadable: {exc.strerror}"
    if not {"memory", "pids"} <= set(available):
        return f"cgroup v2 at {parent} lacks the memory or pids controller"
    try:
        enabled = (parent / "cgroup.subtree_control").read_text(encoding="ascii").split()
        if not {"memory", "pids"} <= set(enabled):
            # Fails with EBUSY when `parent` holds processes (the no-internal-process rule).
            (parent / "cgroup.subtree_control").write_text("+memory +pids", encoding="ascii")
    except OSError as exc:
        return f"cannot delegate memory+pids below {parent}: {exc.strerror}"
    return _writable_dir(parent)


class TreeLimit:
    """One run's cgroup(s): memory and process caps over every process the run starts.

    Use :meth:`create`, wrap the command with :meth:`wrap`, read :meth:`oom_kills` and
    :meth:`forks_refused` after the run, then :meth:`close`.
    """

    def __init__(self, support: CgroupSupport, dirs: list[Path]) -> None:
        self.support = support
        self.dirs = dirs

    @classmethod
    def create(cls, memory_mb: int, max_processes: int) -> TreeLimit | None:
        """A fresh cgroup capped at `memory_mb` MiB (no swap) and `max_processes`; None if none.

        A cgroup that cannot be set up is removed again and the run goes on without one
        (logged): per-process rlimits still apply.
        """
        support = probe_cgroups()
        if not support.usable:
            return None
        name = f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        made: list[Path] = []
        try:
            for parent in support.parents:
                path = parent / name
                path.mkdir()
                made.append(path)
            limit = cls(support, made)
            limit._configure(memory_mb * 2**20, max_processes)
        except OSError as exc:
            logger.warning("sandbox: cgroup setup failed (%s); rlimits only for this run", exc)
            cls(support, made).close()
            return None
        return limit

    def _configure(self, memory: int, processes: int) -> None:
        if self.support.version == "v1":
            mem, pids = self.dirs
            _write(mem / "memory.limit_in_bytes", str(memory))
            _write(mem / "memory.memsw.limit_in_bytes", str(memory), optional=True)
            _write(mem / "memory.swappiness", "0", optional=True)
            _write(pids / "pids.max", str(processes))
        else:
            (group,) = self.dirs
            _write(group / "memory.max", str(memory))
            _write(group / "memory.swap.max", "0", optional=True)
            _write(group / "memory.oom.group", "0", optional=True)
            _write(group / "pids.max", str(processes))

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside this cgroup (the shell joins it, then execs `argv`)."""
        procs = [str(d / "cgroup.procs") for d in self.dirs]
        return [_SH, "-c", _JOIN, "sh", *procs, "--", *argv]

    def oom_kills(self) -> int:
        """Processes of the run the kernel killed at the memory limit."""
        group = self.dirs[0]
        name = "memory.oom_control" if self.support.version == "v1" else "memory.events"
        return _field(group / name, "oom_kill")

    def forks_refused(self) -> int:
        """``fork``/``clone`` calls refused at the process limit."""
        group = self.dirs[-1]
        return _field(group / "pids.events", "max")

    def kill(self) -> int:
        """SIGKILL every process of the run, from outside it; returns how many were signalled.

        With cgroup v2's ``cgroup.kill`` (Linux ≥ 5.14) the kernel kills the whole group at
        once, forks in flight included (returns -1: not counted). Otherwise (v1, older v2)
        the group's members are killed round by round until none is left: a killed process
        forks no more, and the group's process cap bounds what the others add meanwhile.
        """
        group = self.dirs[-1]  # v1: the pids group; every process of the run is in both
        if self.support.version == "v2":
            try:
                (group / "cgroup.kill").write_text("1", encoding="ascii")
                return -1
            except OSError:
                pass  # a kernel before 5.14: the loop below
        signalled = 0
        for _ in range(_KILL_ROUNDS):
            members = _members(group)
            if not members:
                break
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                    signalled += 1
                except (ProcessLookupError, PermissionError):
                    pass
        return signalled

    def close(self) -> None:
        """Remove the cgroup(s); the run's processes are gone by now (retried briefly)."""
        for path in reversed(self.dirs):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last processes are still being torn down
            else:
                logger.warning("sandbox: could not remove cgroup %s", path)
        self.dirs = []


_KILL_ROUNDS = 200
"""Rounds of :meth:`TreeLimit.kill` without ``cgroup.kill`` (a round reads the group's list)."""


def _members(group: Path) -> list[int]:
    """The pids in `group` (none when it is gone)."""
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text(encoding="ascii").split()]
    except (OSError, ValueError):
        return []


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value, encoding="ascii")
    except OSError:
        if not optional:
            raise


def _field(path: Path, key: str) -> int:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0
