"""A project's suite in the sandbox: pytest's plugin autoload against the sandbox's plugins by name.

With autoload on, pytest marks every module of every plugin distribution for assert rewriting,
and the sandbox's read-only site-packages keeps no rewritten bytecode: each run of a suite that
imports hypothesis (or whose plugin does) rewrites hypothesis from source. The bubblewrap runner
now names its plugins (``SandboxRunner.pytest_plugins``) and turns autoload off. This runs each
project's suite three times both ways, in this run, and prints the medians, their ratio and the
test counts (which must not differ):

    python benchmarks/suite_plugins.py DIR   # DIR: what ../shared/repotasks/prepare.py made

Each project's ``repo/`` is copied first; nothing is written into it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from atom_agent.project.suite import SuiteResult, run_suite, suite_limits
from atom_agent.project.suite_command import detect
from atom_agent.sandbox import Limits
from atom_agent.sandbox.bubblewrap import BubblewrapRunner


class Autoload(BubblewrapRunner):
    """The runner as it was: pytest finds its plugins itself."""

    def pytest_plugins(self) -> tuple[str, ...] | None:  # type: ignore[override]
        return None


def _timed(work: Path, runner: BubblewrapRunner, repeats: int) -> tuple[float, SuiteResult]:
    limits = suite_limits(Limits(timeout_s=300.0, cpu_s=300, memory_mb=2048))
    command = detect(work, python=runner.python)
    seconds, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run_suite(work, command, runner=runner, limits=limits)
        seconds.append(time.perf_counter() - started)
    assert result is not None
    return statistics.median(seconds), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", type=Path, help="a folder of projects, each with a repo/")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    before_runner, after_runner = Autoload(), BubblewrapRunner()
    ratios = []
    for repo in sorted(args.projects.glob("*/repo")):
        work = Path(tempfile.mkdtemp(prefix="suite-plugins-")) / "repo"
        shutil.copytree(repo, work)
        try:
            before, old = _timed(work, before_runner, args.repeats)
            after, new = _timed(work, after_runner, args.repeats)
        finally:
            shutil.rmtree(work.parent, ignore_errors=True)
        counts = [(len(r.passed), len(r.failed), len(r.skipped)) for r in (old, new)]
        same = counts[0] == counts[1]
        ratios.append(after / before)
        print(f"{repo.parent.name:32} autoload {before:5.2f} s  by name {after:5.2f} s  "
              f"{after / before:.2f}x  passed {len(new.passed)}  same counts: {same}")  # fmt: skip
    if ratios:
        print(f"median ratio (by name / autoload): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
