"""The bubblewrap sandbox: generated code without root, capabilities, network or a host view.

Each run is ``bwrap`` (the unprivileged Linux sandbox of Flatpak) around the same launcher as the
namespace runner. The code runs as uid/gid 65534 in its own user namespace with no
capabilities, ``no_new_privs``, a new session, and its own PID, IPC, UTS, cgroup and (unless
the run allows network) network namespaces. Its filesystem is built from nothing: ``/usr`` and
the ``/lib*`` links, a few ``/etc`` files (the loader cache, a two-line passwd/group), the
interpreter's prefix with its ``site-packages`` replaced by just pytest and its dependencies,
the launcher, the dependency artifacts, all read-only; the staging area and the run's scratch
directory read-write; a private ``/dev`` (null, zero, random, tty…), private tmpfs ``/tmp``
and ``/dev/shm``, a private ``/proc``. Nothing else of the host is there: no home directories,
no other runs, no memory store, no ``/run`` or ``/var/run`` sockets.

The user namespace maps the sandbox's uid 65534 to the uid of this process, so whatever the
code writes in staging belongs to the agent afterwards without a chown; it also means that,
when the agent runs as root, the kernel checks *owner* permission bits for the (read-only,
listed) files bound in, and ``RLIMIT_NPROC`` does not bind uid 0: the process cap comes from
the run's cgroup (:mod:`atom_agent.sandbox.cgroups`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata as metadata
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

from atom_agent.errors import SandboxUnavailableError
from atom_agent.sandbox.base import Limits, SandboxRunner
from atom_agent.sandbox.subprocess_runner import (
    _LAUNCHER,
    _PYTEST_INI,
    Confinement,
    SubprocessRunner,
)

logger = logging.getLogger(__name__)

SANDBOX_UID = 65534
"""The uid and gid generated code runs as inside the sandbox (``nobody``)."""

DEFAULT_PACKAGES = ("pytest", "hypothesis")
"""Distributions (with their dependencies) importable in the sandbox besides the stdlib."""

_NAMESPACES = [
    "--unshare-user",
    "--disable-userns",  # no nested user namespaces: the code stays without capabilities
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--hostname",
    "sandbox",
    "--die-with-parent",
    "--new-session",
    "--as-pid-1",  # the launcher is init: the namespace dies with it
]
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")
_NET_ETC = ("resolv.conf", "hosts", "nsswitch.conf", "ssl", "ca-certificates")
_PASSWD = f"root:x:0:0:root:/:/bin/false\nsandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::/:/bin/false\n"
_GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\n"


@dataclasses.dataclass(frozen=True)
class BwrapSupport:
    """Whether bubblewrap works here (probed once per process), and why (not)."""

    path: str | None
    usable: bool
    reason: str


def _base_flags(uid: int) -> list[str]:
    return [*_NAMESPACES, "--uid", str(uid), "--gid", str(uid)]


def _system_binds() -> list[str]:
    """``/usr``, the merged-usr ``/lib*`` and ``/bin`` links (or dirs), a few ``/etc`` files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


@functools.cache
def probe_bubblewrap() -> BwrapSupport:
    """Whether ``bwrap`` is installed and can make this runner's sandbox here (cached)."""
    path = shutil.which("bwrap")
    true = shutil.which("true")
    if path is None or true is None:
        support = BwrapSupport(None, False, "bwrap not installed (apt-get install bubblewrap)")
    else:
        argv = [path, *_base_flags(SANDBOX_UID), "--unshare-net", *_system_binds()]
        argv += ["--dev", "/dev", "--proc", "/proc", true]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            support = BwrapSupport(path, False, f"bwrap did not start: {exc}")
        else:
            if done.returncode == 0:
                support = BwrapSupport(path, True, f"{path} works here")
            else:
                why = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
                support = BwrapSupport(path, False, f"bwrap fails here: {why}")
    if support.usable:
        logger.info("sandbox: bubblewrap usable (%s)", support.reason)
    else:
        logger.warning("sandbox: bubblewrap unusable: %s", support.reason)
    return support


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """Names of `dist`'s unconditional requirements and those gated on the Python version."""
    names = []
    for spec in dist.requires or []:
        requirement, _, marker = spec.partition(";")
        if "extra" in marker:
            continue  # optional extras are not needed to import the package
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match:
            names.append(match.group(1))
    return names


def _distributions(packages: Iterable[str]) -> list[metadata.Distribution]:
    """`packages` and their dependencies, installed ones only, each once."""
    found: list[metadata.Distribution] = []
    todo, seen = list(packages), set()
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # e.g. a backport this Python does not need
        found.append(dist)
        todo.extend(_requirement_names(dist))
    return found


def _distribution_entries(packages: Iterable[str]) -> dict[Path, list[str]]:
    """Top-level files and folders of `packages` and their dependencies, by site directory."""
    found: dict[Path, set[str]] = {}
    for dist in _distributions(packages):
        site = Path(str(dist.locate_file(""))).resolve()
        tops = found.setdefault(site, set())
        for file in dist.files or []:
            first = Path(str(file)).parts[0]
            if first not in ("..", "__pycache__") and not first.endswith(".pth"):
                tops.add(first)
    return {site: sorted(t for t in tops if (site / t).exists()) for site, tops in found.items()}


@functools.cache
def pytest_plugins(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The modules of the pytest plugins (``pytest11`` entry points) `packages` bring, sorted."""
    modules = {
        ep.value.partition(":")[0].strip()
        for dist in _distributions(packages)
        for ep in dist.entry_points
        if ep.group == "pytest11"
    }
    return tuple(sorted(modules))


@functools.cache
def _python_binds(python: str, packages: tuple[str, ...]) -> tuple[str, ...]:
    """Read-only binds for `python`: its prefixes, with site-packages cut down to `packages`."""
    if Path(python).resolve() != Path(sys.executable).resolve():
        # Another interpreter: bind its whole installation (its layout is not ours to read).
        root = Path(python).resolve().parent.parent
        link_dir = Path(python).absolute().parent.parent
        return tuple(a for r in {root, link_dir} for a in ("--ro-bind", str(r), str(r)))
    args: list[str] = []
    prefixes = sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).absolute()})
    for prefix in prefixes:
        if not _under(prefix, [Path("/usr")]):
            args += ["--ro-bind", str(prefix), str(prefix)]
    sites = {
        Path(sysconfig.get_paths(vars={"base": p, "platbase": p})[kind]).resolve()
        for p in prefixes
        for kind in ("purelib", "platlib")
    }
    entries = _distribution_entries(packages)
    for site in sorted(s for s in sites if s.is_dir()):
        args += ["--tmpfs", str(site)]  # hide everything installed there …
        for top in entries.get(site, []):  # … but the packages the runs need
            args += ["--ro-bind", str(site / top), str(site / top)]
        args += ["--remount-ro", str(site)]
    return tuple(args)


_LINK_SCAN_DEPTH = 3
_LINK_SCAN_ENTRIES = 2000


def _dependency_paths(python_path: Sequence[Path], writable: Sequence[Path]) -> list[Path]:
    """The read-only dependency directories, plus where the symlinks in them point.

    A dependency directory may be a package of symlinks to committed artifacts elsewhere
    (``deps/<step>`` → ``…/committed/artifacts``); their targets must be there too. Only
    directories outside `writable` are scanned: links the generated code made in staging are
    never followed. The scan is bounded in depth and entries.
    """
    found: list[Path] = []
    for dep in python_path:
        path = Path(dep).resolve()
        if _under(path, writable) or not path.exists() or _under(path, found):
            continue
        found.append(path)
        budget = _LINK_SCAN_ENTRIES
        todo = [(path, 0)] if path.is_dir() else []
        while todo and budget > 0:
            folder, depth = todo.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError:
                continue
            for entry in entries[:budget]:
                budget -= 1
                if entry.is_symlink():
                    target = Path(entry.path).resolve()
                    if target.exists() and not _under(target, [*found, *writable]):
                        found.append(target)
                elif entry.is_dir(follow_symlinks=False) and depth < _LINK_SCAN_DEPTH:
                    todo.append((Path(entry.path), depth + 1))
    return found


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


class BubblewrapRunner(SubprocessRunner):
    """Runs commands in a bubblewrap sandbox (see the module docstring), else like its base.

    Supervision, limits, output capture, the launcher and the per-run cgroup are the namespace
    runner's; only the confinement differs.

    Args:
        python: the interpreter for python files and pytest (default: this venv's).
        packages: distributions importable in the sandbox, with their dependencies.
        tree_limit: give each run its own cgroup where possible (False: rlimits only).

    Raises:
        SandboxUnavailableError: bubblewrap is not installed or does not work on this machine.
    """

    kind = "bubblewrap"

    def __init__(
        self,
        python: str | None = None,
        *,
        packages: Sequence[str] = DEFAULT_PACKAGES,
        tree_limit: bool = True,
    ) -> None:
        super().__init__(python, isolate=True, tree_limit=tree_limit)
        self.kind = "bubblewrap"
        self.packages = tuple(packages)
        support = probe_bubblewrap()
        if not support.usable or support.path is None:
            raise SandboxUnavailableError(f"bubblewrap runner unavailable: {support.reason}")
        self.bwrap = support.path

    def pytest_plugins(self) -> tuple[str, ...]:
        """The plugin modules of the distributions bound in (see the base class)."""
        return pytest_plugins(self.packages)

    def with_packages(self, packages: Sequence[str]) -> SandboxRunner:
        """This runner's confinement with `packages` (and their dependencies) bound too."""
        extra = tuple(p for p in packages if p not in self.packages)
        if not extra:
            return self
        return BubblewrapRunner(self.python, packages=(*self.packages, *extra),
                                tree_limit=self.tree_limit)  # fmt: skip

    def _prefix(
        self, limits: Limits, cwd: Path, scratch: Path, python_path: Sequence[Path]
    ) -> Confinement:
        scratch = scratch.resolve()
        etc = scratch / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "passwd").write_text(_PASSWD, encoding="ascii")
        (etc / "group").write_text(_GROUP, encoding="ascii")
        size = str(limits.memory_mb * 2**20)
        args = [self.bwrap, *_base_flags(SANDBOX_UID)]
        if not limits.network:
            args.append("--unshare-net")
        args += _system_binds()
        if limits.network:
            for name in _NET_ETC:
                args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind", str(etc / "passwd"), "/etc/passwd"]
        args += ["--ro-bind", str(etc / "group"), "/etc/group"]
        args += ["--dev", "/dev", "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"]
        # /proc/sys read-only: the code's host uid is the agent's (0 as root), and sysctl files
        # check only owner bits, so a writable /proc/sys would let it set global sysctls.
        # (bwrap covers it only when the directory itself is writable, which it is not.)
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
        args += ["--ro-bind-try", "/proc/pressure", "/proc/pressure"]  # no PSI triggers
        args += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
        args += _python_binds(self.python, self.packages)
        args += ["--ro-bind", str(_LAUNCHER), str(_LAUNCHER)]
        args += ["--ro-bind", str(_PYTEST_INI), str(_PYTEST_INI)]
        writable = [cwd, scratch]
        for path in _dependency_paths(python_path, writable):
            args += ["--ro-bind", str(path), str(path)]
        for path in writable:
            args += ["--bind", str(path), str(path)]
        # The root is bwrap's own tmpfs, owned by the sandbox uid: freeze it once it is built.
        args += ["--remount-ro", "/", "--chdir", str(cwd), "--"]
        return Confinement(
            prefix=args,
            network=not limits.network,
            pid_namespace=True,
            read_only_fs=True,
            launcher_config={"confined": True},
        )
