"""The sandbox runner interface: limits in, a run result out; runners are pluggable."""

from __future__ import annotations

import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from atom_agent.context import Context
from atom_agent.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Resource limits of one sandboxed run.

    Attributes:
        timeout_s: wall-clock seconds before the whole process tree is killed.
        cpu_s: CPU seconds (``RLIMIT_CPU``); the process gets SIGXCPU, then SIGKILL.
        memory_mb: MiB: each process's address space (``RLIMIT_AS``; allocations beyond it
            fail) and, where a cgroup can be made, the resident memory of the whole process
            tree (beyond it the kernel kills a process of the run).
        output_bytes: stdout+stderr bytes kept (head and tail); the rest is counted, not kept.
        file_size_mb: largest file the run may write (``RLIMIT_FSIZE``), MiB.
        max_processes: processes the run may have: the run's cgroup ``pids.max`` where a
            cgroup can be made; else ``RLIMIT_NPROC`` when not root (root ignores it), and the
            PID namespace's own ``pid_max`` where the kernel keeps one per namespace (Linux ≥
            6.14; the kernel's minimum makes that cap at least 300).
        open_files: ``RLIMIT_NOFILE``.
        network: allow network access; when False the run gets its own empty network
            namespace where the machine allows it.
    """

    timeout_s: float = 60.0
    cpu_s: int = 60
    memory_mb: int = 1024
    output_bytes: int = 65536
    file_size_mb: int = 64
    max_processes: int = 256
    open_files: int = 1024
    network: bool = False

    def __post_init__(self) -> None:
        """Reject limits that could not work (zero or negative)."""
        for name in (
            "timeout_s",
            "cpu_s",
            "memory_mb",
            "output_bytes",
            "file_size_mb",
            "max_processes",
            "open_files",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"Limits.{name}: {value!r} must be a positive number")

    @classmethod
    def from_context(cls, context: Context) -> Limits:
        """The limits configured in a :class:`~atom_agent.context.Context`."""
        return cls(
            timeout_s=context.sandbox_timeout_s,
            cpu_s=context.sandbox_cpu_s,
            memory_mb=context.sandbox_memory_mb,
            output_bytes=context.sandbox_output_bytes,
            network=context.sandbox_network,
        )


@dataclass(frozen=True)
class TestCounts:
    """Pytest outcome counts parsed from a real run (junit xml, else the summary line)."""

    __test__ = False  # not a pytest test class, despite the name

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        """Tests collected and run (skipped included)."""
        return self.passed + self.failed + self.errors + self.skipped


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What one sandboxed run did.

    ``exit_code`` is None when the process died by a signal (``signal`` says which).
    ``output`` is stdout and stderr interleaved, capped: when ``truncated``, the middle is
    replaced by a note and ``output_bytes`` says how much there was. ``network_isolated``,
    ``pid_namespace`` and ``read_only_fs`` (everything but the staging area and the run's
    scratch directory mounted read-only) say what isolation the run actually had;
    ``sandbox`` names the runner (``bubblewrap``, ``namespaces``, ``rlimits``) and
    ``tree_limit`` the cgroup that capped the whole tree (None: per-process rlimits only),
    with ``oom_kills`` (processes the kernel killed at the memory limit) and ``forks_refused``.
    ``report_error`` is set when a run that must leave a report (pytest) left none: the run
    is then not ``ok``, whatever its exit code.
    """

    command: list[str]
    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    output: str = ""
    output_bytes: int = 0
    truncated: bool = False
    tests: TestCounts | None = None
    network_isolated: bool = False
    pid_namespace: bool = False
    read_only_fs: bool = False
    sandbox: str = ""
    tree_limit: str | None = None
    oom_kills: int = 0
    forks_refused: int = 0
    report_error: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Exited 0 within its limits (and left its report, when one was due)."""
        return self.exit_code == 0 and not self.timed_out and not self.report_error

    @property
    def signal_name(self) -> str | None:
        """``SIGKILL``, ``SIGXCPU`` … or None."""
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    @property
    def limit_hit(self) -> str | None:
        """Which limit ended the run, when one evidently did: timeout, cpu, file_size, memory."""
        if self.timed_out:
            return "timeout"
        if self.signal == signal.SIGXCPU:
            return "cpu"
        if self.signal == signal.SIGXFSZ or "File too large" in self.output:
            return "file_size"
        if (
            self.oom_kills
            or "MemoryError" in self.output
            or "Cannot allocate memory" in self.output
        ):
            return "memory"
        return None


class SandboxRunner(ABC):
    """Runs commands under :class:`Limits`; subclass to add e.g. a container runner.

    A runner implements :meth:`run`; :meth:`run_python` and :meth:`run_pytest` build on it.
    ``python`` is the interpreter *as the sandbox sees it* (a container runner would use its
    image's python); ``scratch`` is a private directory for the run (HOME, TMPDIR, reports).
    """

    python: str = sys.executable

    @abstractmethod
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
        """Run `argv` in `cwd` under `limits`; never raises for what the command itself does.

        Args:
            argv: the command; ``argv[0]`` is an absolute path or a name on the sandbox's PATH.
            cwd: the working directory (the attempt's staging area).
            limits: the resource limits.
            python_path: directories put on ``PYTHONPATH`` (staging first, then dependencies).
            env: extra variables for the child (on top of the scrubbed base environment).
            scratch: a private directory for this run; the runner makes a temporary one if None.

        Raises:
            SandboxError: the runner itself failed (cannot spawn, cannot supervise).
        """

    def with_packages(self, packages: Sequence[str]) -> SandboxRunner:
        """A runner whose runs can also import `packages` (installed distributions).

        Runners that show the whole interpreter already can; this one is returned as is.
        """
        return self

    def pytest_plugins(self) -> tuple[str, ...] | None:
        """The pytest plugins a whole suite's run loads, by module; None: pytest's autoload.

        A runner that shows only some distributions names their plugins, so pytest loads them
        with its autoload off: with it on, pytest would rewrite the asserts of every plugin
        distribution's modules when they are imported (hypothesis: seconds a run, since a
        read-only site-packages keeps no rewritten bytecode). This one shows the whole
        interpreter, so pytest finds its plugins itself.
        """
        return None

    def run_python(
        self,
        script: str,
        *,
        cwd: Path,
        limits: Limits,
        args: Sequence[str] = (),
        python_path: Sequence[Path] = (),
    ) -> RunResult:
        """Run ``python SCRIPT ARGS`` (script relative to `cwd`)."""
        return self.run(
            [self.python, script, *args], cwd=cwd, limits=limits, python_path=python_path
        )

    @abstractmethod
    def run_pytest(
        self,
        *,
        cwd: Path,
        limits: Limits,
        targets: Sequence[str] = (),
        python_path: Sequence[Path] = (),
    ) -> RunResult:
        """Run pytest on `targets` (default: `cwd`); ``tests`` holds the counts of its report.

        Counts come only from the report pytest writes at the end of its session; a run that
        leaves none has ``tests`` None and ``report_error`` set (it is never ``ok``).
        """
