"""The subprocess sandbox: namespaces where available, rlimits, a wall clock, capped output.

Resource isolation for generated code, not a security boundary against hostile code: the child
runs as the same user, can read the whole filesystem, and (as root) could undo its read-only
mounts. See ``docs/workspace-and-sandbox.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import resource
import shutil
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from atom_agent.errors import SandboxError
from atom_agent.sandbox import _launcher
from atom_agent.sandbox._supervise import KILL_MARGIN_S, Capture, killpg, supervise
from atom_agent.sandbox.base import Limits, RunResult, SandboxRunner, TestCounts
from atom_agent.sandbox.cgroups import TreeLimit

logger = logging.getLogger(__name__)

_LAUNCHER = Path(_launcher.__file__).resolve()
_PYTEST_INI = _LAUNCHER.parent / "sandbox_pytest.ini"
"""pytest's ini file in the sandbox: no project settings; ``test.py`` (what the executor
writes, which pytest's default patterns miss), ``tests.py``, ``test_*.py``, ``*_test.py``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Confinement:
    """How one run's launcher is wrapped, and what that wrapping isolates.

    Attributes:
        prefix: the command put before ``python -I -S _launcher.py CONFIG``.
        network: the run has its own empty network namespace.
        pid_namespace: the run has its own PID namespace.
        read_only_fs: everything but staging and scratch is read-only by construction
            (otherwise the launcher says whether it managed to remount).
        launcher_config: extra keys for the launcher's config file.
    """

    prefix: list[str]
    network: bool
    pid_namespace: bool
    read_only_fs: bool = False
    launcher_config: dict[str, Any] = dataclasses.field(default_factory=dict)


_NO_NAMESPACES = Confinement(prefix=[], network=False, pid_namespace=False)


@functools.cache
def probe_isolation(allow_network: bool) -> Confinement:
    """Find the strongest ``unshare`` prefix that works here (probed once per process).

    Tried in order: IPC, UTS, mount (private /proc), network and PID namespaces (as root); the
    same inside a user namespace (``-r``, unprivileged); network and PID only; network only.
    Falls back to no namespaces at all (the launcher's subreaper and rlimits still apply).
    """
    unshare = shutil.which("unshare")
    true = shutil.which("true")
    if unshare is None or true is None:
        logger.warning("sandbox: unshare not found; runs get no network or PID namespace")
        return _NO_NAMESPACES
    net = [] if allow_network else ["-n"]
    # -i/-u: private SysV IPC and hostname; --mount-proc: a private mount namespace whose /proc
    # shows only the run's own processes.
    candidates = [
        ["-i", "-u", "--mount-proc", *net, "-p"],
        ["-r", "-i", "-u", "--mount-proc", *net, "-p"],
        [*net, "-p"],
        ["-r", *net, "-p"],
    ]
    if not allow_network:
        candidates += [["-n"], ["-r", "-n"]]
    for flags in candidates:
        prefix = (unshare, *flags, "--fork", "--kill-child", "--")
        try:
            done = subprocess.run([*prefix, true], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            logger.info("sandbox isolation: %s", " ".join(prefix))
            return Confinement(
                prefix=list(prefix), network="-n" in flags, pid_namespace="-p" in flags
            )
    logger.warning("sandbox: no usable unshare mode; runs get no network or PID namespace")
    return _NO_NAMESPACES


class SubprocessRunner(SandboxRunner):
    """Runs commands in a supervised subprocess tree (see the module docstring).

    Per run: a scrubbed environment (an allow-list: PATH, HOME/TMPDIR in a private scratch
    directory, locale, PYTHONPATH; no API keys or other parent variables), ``cwd`` = the
    staging area, rlimits (CPU, address space, file size, open files, core dumps off, process
    count when not root), a wall-clock timeout after which every process of the run is killed,
    descendants reaped when the main process exits, output capped while it is read, and
    ``unshare`` network / PID / mount / IPC / UTS namespaces where the machine allows them;
    inside a private mount namespace everything but the staging area and the run's scratch
    directory is mounted read-only, and the PID namespace's ``pid_max`` caps the process count.

    Where this process can make cgroups, each run gets its own (memory and process caps over
    the whole tree, see :mod:`atom_agent.sandbox.cgroups`).

    Args:
        python: the interpreter for python files and pytest (default: this venv's).
        isolate: use ``unshare`` namespaces when available (False: rlimits and reaping only).
        tree_limit: give each run its own cgroup where possible (False: rlimits only).
    """

    kind = "namespaces"

    def __init__(
        self, python: str | None = None, *, isolate: bool = True, tree_limit: bool = True
    ) -> None:
        self.python = python or self.python
        self.isolate = isolate
        self.tree_limit = tree_limit
        self._cleaner: ThreadPoolExecutor | None = None
        self._cleaner_lock = threading.Lock()
        if not isolate:
            self.kind = "rlimits"

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        limits: Limits,
        python_path: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        scratch: Path | None = None,
    ) -> RunResult:
        """See :meth:`SandboxRunner.run`."""
        cwd = Path(cwd).resolve()
        if not cwd.is_dir():
            raise SandboxError(f"sandbox cwd {cwd} is not a directory")
        if not argv:
            raise SandboxError("sandbox: empty command")
        own_scratch = scratch is None
        scratch_dir = Path(tempfile.mkdtemp(prefix="atom-sandbox-")) if scratch is None else scratch
        try:
            return self._run(list(argv), cwd, limits, python_path, env or {}, scratch_dir)
        finally:
            if own_scratch:
                self._discard(scratch_dir)

    def run_pytest(
        self,
        *,
        cwd: Path,
        limits: Limits,
        targets: Sequence[str] = (),
        python_path: Sequence[Path] = (),
    ) -> RunResult:
        """Run pytest isolated from any enclosing project config; counts from its junit report.

        Pytest sees its own ini file (collecting ``test.py``, ``tests.py``, ``test_*.py`` and
        ``*_test.py``), ``rootdir`` and ``confcutdir`` = `cwd` (no conftest or settings from
        parent directories), no cache directory and no auto-loaded plugins. The counts come
        only from the junit xml pytest writes when its session ends: a run that ends before
        (a test calling ``os._exit``, a crash, a kill) has no counts and is not ``ok``, whatever
        its exit code (``report_error`` says why).
        """
        cwd = Path(cwd).resolve()
        scratch = Path(tempfile.mkdtemp(prefix="atom-pytest-"))
        try:
            junit = scratch / "junit.xml"
            argv = [
                self.python,
                "-m",
                "pytest",
                "-q",
                # Short tracebacks: the failing line and pytest's explanation of the assert,
                # without each test's whole source (a model reads this output).
                "--tb=short",
                "-p",
                "no:cacheprovider",
                "--color=no",
                "-c",
                str(_PYTEST_INI),
                f"--rootdir={cwd}",
                f"--confcutdir={cwd}",
                f"--junitxml={junit}",
                "-o",
                "junit_family=xunit2",
                *targets,
            ]
            result = self.run(
                argv,
                cwd=cwd,
                limits=limits,
                python_path=python_path,
                env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                scratch=scratch,
            )
            counts = counts_from_junit(junit)
        finally:
            self._discard(scratch)
        if counts is not None:
            return dataclasses.replace(result, tests=counts)
        return dataclasses.replace(result, tests=None, report_error=_died(result))

    # --- internals -------------------------------------------------------------------------------

    def _prefix(
        self, limits: Limits, cwd: Path, scratch: Path, python_path: Sequence[Path]
    ) -> Confinement:
        """How the launcher is started: the command prefix and what isolation it gives."""
        return probe_isolation(limits.network) if self.isolate else _NO_NAMESPACES

    def _discard(self, scratch: Path) -> None:
        """Remove a run's scratch directory on a background thread, off the caller's path.

        Removing one costs ≈ 0.6 ms on ext4 and the result never depends on it. The thread is a
        ``ThreadPoolExecutor``'s, so at interpreter exit it still removes what is queued.
        """
        with self._cleaner_lock:
            if self._cleaner is None:
                self._cleaner = ThreadPoolExecutor(1, thread_name_prefix="atom-sandbox-clean")
            cleaner = self._cleaner
        try:
            cleaner.submit(shutil.rmtree, scratch, ignore_errors=True)
        except RuntimeError:  # interpreter shutting down: no new threads
            shutil.rmtree(scratch, ignore_errors=True)

    def _run(
        self,
        argv: list[str],
        cwd: Path,
        limits: Limits,
        python_path: Sequence[Path],
        extra_env: Mapping[str, str],
        scratch: Path,
    ) -> RunResult:
        child_env = self._env(scratch, python_path, extra_env)
        program = (
            argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=child_env["PATH"])
        )
        if program is None:
            raise SandboxError(f"sandbox: {argv[0]!r} is not on the sandbox PATH")
        cmd = [program, *argv[1:]]
        confinement = self._prefix(limits, cwd, scratch, python_path)
        status_file = scratch / "status.json"
        config = scratch / "launch.json"
        config.write_text(
            json.dumps(
                {
                    "cmd": cmd,
                    "env": child_env,
                    "limits": _rlimits(limits),
                    "timeout_s": limits.timeout_s,
                    "status_file": str(status_file),
                    "max_processes": limits.max_processes,
                    # Everything else becomes read-only where the run has its own mount namespace.
                    "writable": [str(cwd), str(scratch.resolve())],
                    "cwd": str(cwd),
                    **confinement.launcher_config,
                }
            ),
            encoding="utf-8",
        )
        full = [*confinement.prefix, self.python, "-I", "-S", str(_LAUNCHER), str(config)]
        tree = TreeLimit.create(limits.memory_mb, limits.max_processes) if self.tree_limit else None
        if tree is not None:
            full = tree.wrap(full)
        try:
            return self._start(argv, full, cwd, child_env, limits, confinement, tree, status_file)
        finally:
            if tree is not None:
                tree.close()

    def _start(
        self,
        argv: list[str],
        full: list[str],
        cwd: Path,
        child_env: Mapping[str, str],
        limits: Limits,
        confinement: Confinement,
        tree: TreeLimit | None,
        status_file: Path,
    ) -> RunResult:
        """Start the launcher, supervise it to its deadline and say what the run was under."""
        started = time.monotonic()
        proc = _popen(full, cwd, child_env)
        capture = Capture(limits.output_bytes)

        def stop() -> None:
            """End the run's whole tree: its cgroup, then its process group (bwrap, unshare)."""
            if tree is not None:
                tree.kill()
            killpg(proc.pid)

        deadline = started + limits.timeout_s + KILL_MARGIN_S
        runner_killed = supervise(proc, capture, deadline, stop)
        duration = time.monotonic() - started
        outcome, notes = _outcome(status_file, proc.returncode, runner_killed, limits.timeout_s)
        read_only = confinement.read_only_fs or bool(outcome.get("read_only_fs"))
        oom_kills = tree.oom_kills() if tree is not None else 0
        refused = tree.forks_refused() if tree is not None else 0
        notes += _confinement_notes(
            outcome,
            limits,
            confinement,
            tree,
            read_only=read_only,
            oom_kills=oom_kills,
            refused=refused,
        )
        return RunResult(
            command=argv,
            exit_code=outcome["exit_code"],
            signal=outcome["signal"],
            timed_out=bool(outcome["timed_out"]),
            duration_s=duration,
            output=capture.text(),
            output_bytes=capture.total,
            truncated=capture.truncated,
            network_isolated=confinement.network,
            pid_namespace=confinement.pid_namespace,
            read_only_fs=read_only,
            sandbox=self.kind,
            tree_limit=None if tree is None else f"cgroup {tree.support.version}",
            oom_kills=oom_kills,
            forks_refused=refused,
            notes=notes,
        )

    def _env(
        self, scratch: Path, python_path: Sequence[Path], extra: Mapping[str, str]
    ) -> dict[str, str]:
        home = scratch / "home"
        tmp = scratch / "tmp"
        home.mkdir(exist_ok=True)
        tmp.mkdir(exist_ok=True)
        bin_dir = str(Path(self.python).parent)
        env = {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONIOENCODING": "utf-8",
            # One thread per numeric library: thread pools reserve address space per thread.
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        if python_path:
            env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in python_path)
        env.update(extra)
        return env


def _rlimits(limits: Limits) -> dict[str, list[int]]:
    wanted: dict[str, tuple[int, int]] = {
        # The soft CPU limit sends SIGXCPU; one second later the hard limit sends SIGKILL.
        "RLIMIT_CPU": (int(limits.cpu_s), int(limits.cpu_s) + 1),
        "RLIMIT_AS": (limits.memory_mb * 2**20, limits.memory_mb * 2**20),
        "RLIMIT_FSIZE": (limits.file_size_mb * 2**20, limits.file_size_mb * 2**20),
        "RLIMIT_NOFILE": (limits.open_files, limits.open_files),
        "RLIMIT_CORE": (0, 0),
    }
    if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; it also counts all of the user's processes
        wanted["RLIMIT_NPROC"] = (limits.max_processes, limits.max_processes)
    result: dict[str, list[int]] = {}
    for name, (soft, hard) in wanted.items():
        _, current_hard = resource.getrlimit(getattr(resource, name))
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        result[name] = [soft, hard]
    return result


def _died(result: RunResult) -> str:
    """Why pytest left no report, for the model: how the process ended."""
    if result.timed_out:
        how = "killed at the time limit"
    elif result.signal is not None:
        how = f"killed by {result.signal_name}"
    else:
        how = f"exit code {result.exit_code}"
    hint = " (a test or the code called os._exit or exit early?)" if result.exit_code == 0 else ""
    return f"pytest died before reporting: {how}{hint}; no test counts"


def _read_status(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def counts_from_junit(path: Path) -> TestCounts | None:
    """Counts from pytest's ``--junitxml`` file; None when missing or unreadable.

    Pytest records collection errors as ``error`` testcases, so an import error in a test file
    counts as an error rather than vanishing.
    """
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if not suites:
        return None
    tests = failures = errors = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failures += int(suite.get("failures", 0))
        errors += int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return TestCounts(
        passed=max(0, tests - failures - errors - skipped),
        failed=failures,
        errors=errors,
        skipped=skipped,
    )


def _popen(full: list[str], cwd: Path, child_env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """The launcher's process, in a session of its own, output piped, nothing inherited."""
    try:
        return subprocess.Popen(
            full,
            cwd=cwd,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise SandboxError(f"sandbox: cannot start {full[0]}: {exc}") from exc


def _outcome(
    status_file: Path, code: int | None, runner_killed: bool, timeout_s: float
) -> tuple[dict[str, Any], list[str]]:
    """The launcher's report of the run, or one taken from the process when it never wrote it."""
    outcome = _read_status(status_file)
    notes: list[str] = []
    if outcome is None:
        # The launcher never reported: the runner ended the run at its limit, or it crashed.
        outcome = {
            "exit_code": code if code is not None and code >= 0 else None,
            "signal": -code if code is not None and code < 0 else None,
            "timed_out": runner_killed,
        }
        notes.append(
            f"the runner ended the whole run at its {timeout_s:g}s limit"
            if runner_killed
            else "launcher did not report; outcome taken from the process group"
        )
    return outcome, notes


def _confinement_notes(
    outcome: dict[str, Any],
    limits: Limits,
    confinement: Confinement,
    tree: TreeLimit | None,
    *,
    read_only: bool,
    oom_kills: int,
    refused: int,
) -> list[str]:
    """What the run was not confined by, and what its limits stopped (OOM kills, forks)."""
    notes: list[str] = []
    if outcome.get("killed_descendants"):
        notes.append(f"killed {outcome['killed_descendants']} leftover process(es)")
    if not read_only:
        notes.append("filesystem writable outside the staging area (no private mount namespace)")
    if tree is None and outcome.get("pid_max") is None and os.geteuid() == 0:
        notes.append("process count not limited (root, no cgroup, no per-namespace pid_max)")
    if not limits.network and not confinement.network:
        notes.append("network not isolated: this run has no network namespace")
    if oom_kills:
        notes.append(
            f"{oom_kills} process(es) killed at the run's {limits.memory_mb} MiB memory limit"
        )
    if refused:
        notes.append(f"{refused} fork(s) refused at the {limits.max_processes}-process limit")
    return notes
