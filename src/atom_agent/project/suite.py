"""A project's own test suite as evidence: find its command, run it sandboxed, gate a change."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atom_agent.project.suite_command import TestCommand
from atom_agent.sandbox.base import Limits, RunResult, SandboxRunner

logger = logging.getLogger(__name__)

OUTPUT_TAIL_CHARS = 3000
"""How much of the end of a suite's output a :class:`SuiteResult` keeps."""


@dataclass(frozen=True)
class SuiteResult:
    """What one run of a project's suite did, test by test (pytest node ids).

    Attributes:
        passed: node ids that passed (``"tests/test_x.py::TestC::test_y[1]"``).
        failed: node ids that failed or errored (setup errors included), and the files or
            folders whose collection failed.
        skipped: node ids skipped or expected to fail (xfail).
        seconds: wall-clock seconds of the run.
        exit_code: pytest's exit code; None when it was killed.
        output_tail: the last :data:`OUTPUT_TAIL_CHARS` characters of its output.
        collected_ok: pytest collected every test and reported (no collection error, no
            usage error, not killed, not zero tests).
    """

    passed: frozenset[str]
    failed: frozenset[str]
    skipped: frozenset[str]
    seconds: float
    exit_code: int | None
    output_tail: str
    collected_ok: bool
    plugin_output: str = ""
    """What a :class:`Plugin` of the run wrote (not kept by :meth:`to_dict`)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, counts first, that :meth:`from_dict` reads back."""
        return {
            "passed": len(self.passed),
            "failed": len(self.failed),
            "skipped": len(self.skipped),
            "seconds": round(self.seconds, 3),
            "exit_code": self.exit_code,
            "collected_ok": self.collected_ok,
            "output_tail": self.output_tail,
            "ids": {
                "passed": sorted(self.passed),
                "failed": sorted(self.failed),
                "skipped": sorted(self.skipped),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SuiteResult:
        """Read back :meth:`to_dict`."""
        ids = data["ids"]
        return cls(
            passed=frozenset(ids["passed"]),
            failed=frozenset(ids["failed"]),
            skipped=frozenset(ids["skipped"]),
            seconds=float(data["seconds"]),
            exit_code=data["exit_code"],
            output_tail=str(data["output_tail"]),
            collected_ok=bool(data["collected_ok"]),
        )


@dataclass(frozen=True)
class Plugin:
    """A pytest plugin for one run of the suite: its module name, source and environment."""

    name: str
    source: str
    env: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Gate:
    """How a run of the suite after a change compares with the baseline before it.

    Attributes:
        regressions: passed in the baseline, failed (or vanished) after, and again on a rerun.
        flaky: passed in the baseline, failed after, passed on the rerun.
        fixed: failed in the baseline, pass after.
        new_failures: failing after, and neither passed nor failed in the baseline (new tests,
            tests skipped before, files that no longer collect).
    """

    regressions: list[str]
    flaky: list[str]
    fixed: list[str]
    new_failures: list[str]


def suite_limits(limits: Limits) -> Limits:
    """`limits` raised for a whole test suite: ≥ 300 s wall and CPU, ≥ 2048 MiB."""
    return dataclasses.replace(
        limits,
        timeout_s=max(limits.timeout_s, 300.0),
        cpu_s=max(limits.cpu_s, 300),
        memory_mb=max(limits.memory_mb, 2048),
    )


# --- running -------------------------------------------------------------------------------------


def run_suite(
    root: Path,
    command: TestCommand,
    *,
    runner: SandboxRunner,
    limits: Limits,
    only: Sequence[str] = (),
    plugin: Plugin | None = None,
) -> SuiteResult:
    """Run the project's suite in the sandbox and read its junit report test by test.

    Args:
        root: the project's root (the run's working directory, writable in the sandbox).
        command: from :func:`detect`.
        runner: the sandbox.
        limits: the run's limits (see :func:`suite_limits`).
        only: node ids to run instead of the default targets (a rerun of suspects).
        plugin: a pytest plugin loaded into the run (``-p``); what it writes to the file
            named by ``$ATOM_PLUGIN_OUT`` comes back as :attr:`SuiteResult.plugin_output`.

    Returns:
        The outcome per node id. A run that leaves no report (killed, crashed, a usage error)
        has ``collected_ok`` False and no ids; its output is kept.
    """
    root = Path(root).resolve()
    scratch = Path(tempfile.mkdtemp(prefix="atom-suite-"))
    junit = scratch / "junit.xml"
    out = scratch / "plugin.out"
    argv, env, python_path = _invocation(
        root, command, scratch, (junit, out), only, plugin, runner.pytest_plugins()
    )
    try:
        result = runner.run(
            argv,
            cwd=root,
            limits=limits,
            python_path=python_path,
            env=env,
            scratch=scratch,
        )
        report = _read_junit(junit, root)
        written = out.read_text(encoding="utf-8", errors="replace") if out.is_file() else ""
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _suite_result(result, report, written)


def _invocation(
    root: Path,
    command: TestCommand,
    scratch: Path,
    reports: tuple[Path, Path],
    only: Sequence[str],
    plugin: Plugin | None,
    installed: Sequence[str] | None,
) -> tuple[list[str], dict[str, str], list[Path]]:
    """The suite's argv (junit report, root dir, plugins, targets), its env and python path.

    `reports` are the junit file and the file a plugin writes to. A plugin's module is
    written into `scratch` (writable, seen by the sandbox), never into the project's tree.
    `installed` are the sandbox's own pytest plugins (``SandboxRunner.pytest_plugins``):
    loaded by name with pytest's autoload off; None leaves autoload on.
    """
    junit, out = reports
    options = command.argv[: len(command.argv) - len(command.targets)]
    targets = list(only or command.targets)
    argv = [*options, f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    if not any(a.startswith("--rootdir") for a in options):
        argv.append(f"--rootdir={root}")  # node ids relative to the project root
    # The runners set it too; a project's checkout gets no __pycache__ whatever the runner.
    # One hash seed for every run: a test parametrized over a set gets its ids (`x0`, `x1` …)
    # in iteration order, and the gate compares node ids of the runs before and after a change.
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    if installed is not None:
        argv += [a for module in installed for a in ("-p", module)]
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    python_path = [root / p for p in command.python_path]
    if plugin is not None:
        plugins = scratch / "plugins"
        plugins.mkdir()
        (plugins / f"{plugin.name}.py").write_text(plugin.source, encoding="utf-8")
        python_path.append(plugins)
        argv += ["-p", plugin.name]
        env |= {"ATOM_PLUGIN_OUT": str(out), **plugin.env}
    return [*argv, *targets], env, python_path


def _suite_result(
    result: RunResult,
    report: tuple[set[str], set[str], set[str], bool] | None,
    written: str,
) -> SuiteResult:
    """The run read test by test; without a report, no ids and the reason after the output."""
    tail = result.output[-OUTPUT_TAIL_CHARS:]
    if report is None:
        how = result.limit_hit or (
            f"killed by {result.signal_name}" if result.signal else f"exit code {result.exit_code}"
        )
        logger.warning("test suite left no report (%s)", how)
        return SuiteResult(
            passed=frozenset(),
            failed=frozenset(),
            skipped=frozenset(),
            seconds=result.duration_s,
            exit_code=result.exit_code,
            output_tail=f"{tail}\n[pytest left no report: {how}]",
            collected_ok=False,
            plugin_output=written,
        )
    passed, failed, skipped, broken = report
    return SuiteResult(
        passed=frozenset(passed - failed),
        failed=frozenset(failed),
        skipped=frozenset(skipped - failed),
        seconds=result.duration_s,
        exit_code=result.exit_code,
        output_tail=tail,
        # 0: all passed, 1: some failed; 2 (interrupted), 3, 4 (usage), 5 (no tests) are not a
        # suite that ran.
        collected_ok=not broken and result.exit_code in (0, 1),
        plugin_output=written,
    )


def _read_junit(path: Path, root: Path) -> tuple[set[str], set[str], set[str], bool] | None:
    """Passed, failed and skipped node ids from pytest's junit xml; whether a collection failed.

    None when there is no readable report.
    """
    try:
        tree = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    passed: set[str] = set()
    failed: set[str] = set()
    skipped: set[str] = set()
    broken = False
    files: dict[str, tuple[str, list[str]]] = {}
    for case in tree.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        outcomes = {child.tag for child in case}
        if not classname:  # a collection error: `name` is the module or folder, dotted
            node = _path_of(name.split("."), root)[0] or name
            broken = broken or "error" in outcomes
        else:
            if classname not in files:
                files[classname] = _path_of(classname.split("."), root)
            file, classes = files[classname]
            node = "::".join([file or classname.replace(".", "/"), *classes, name])
        if outcomes & {"failure", "error"}:
            failed.add(node)
        elif "skipped" in outcomes:
            skipped.add(node)
        else:
            passed.add(node)
    return passed, failed, skipped, broken


def _path_of(parts: list[str], root: Path) -> tuple[str, list[str]]:
    """Split a dotted junit classname into the file under `root` it names and its classes.

    Pytest writes ``tests/unit/test_x.py::TestC`` as ``tests.unit.test_x.TestC``; the longest
    prefix that is a ``.py`` file (or, for a folder that failed to collect, a folder) is the
    path. ("", parts) when none is.
    """
    for cut in range(len(parts), 0, -1):
        rel = "/".join(parts[:cut])
        if (root / f"{rel}.py").is_file():
            return f"{rel}.py", parts[cut:]
        if cut == len(parts) and (root / rel).is_dir():
            return rel, []
    return "", parts


# --- the gate ------------------------------------------------------------------------------------


def gate(
    baseline: SuiteResult,
    after: SuiteResult,
    rerun: Callable[[list[str]], SuiteResult],
) -> Gate:
    """Compare a suite run after a change with the baseline; rerun suspects once.

    A test that passed in the baseline and does not pass after (failed, or vanished: a file
    that no longer imports) is suspect; `rerun` runs the suspects once (it is not called when
    there are none). Those that pass then are flaky, the rest are regressions. A test skipped
    after the change is not suspect.
    """
    suspects = sorted(baseline.passed - after.passed - after.skipped)
    regressions: list[str] = []
    flaky: list[str] = []
    if suspects:
        again = rerun(suspects)
        for node in suspects:
            (flaky if node in again.passed else regressions).append(node)
        if flaky:
            logger.info("flaky tests (passed on rerun): %s", ", ".join(flaky))
    known = baseline.passed | baseline.failed
    return Gate(
        regressions=regressions,
        flaky=flaky,
        fixed=sorted(baseline.failed & after.passed),
        new_failures=sorted(after.failed - known),
    )
