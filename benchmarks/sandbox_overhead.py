"""Measure the sandbox's cost per run: bubblewrap vs the namespace runner vs a bare subprocess.

Run: ``.venv/bin/python benchmarks/sandbox_overhead.py [REPEAT]``. Every variant is measured in
the same run, interleaved round-robin (so load on the machine hits them alike), and reported
as medians, the start-up cost over a bare ``subprocess.run`` and ratios. Asserts nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from atom_agent.sandbox import (
    BubblewrapRunner,
    Limits,
    SubprocessRunner,
    probe_bubblewrap,
    probe_cgroups,
    probe_isolation,
)

TARGET_MS = 150.0  # the bubblewrap runner's start-up cost we aim to stay under


def median_ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    limits = Limits(timeout_s=60.0)
    print("namespace isolation:", probe_isolation(False))
    print("bubblewrap:", probe_bubblewrap())
    print("cgroups:", probe_cgroups())
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        (staging / "noop.py").write_text("pass\n")
        (staging / "test_one.py").write_text("def test_one():\n    assert True\n")
        (staging / "flood.py").write_text(
            "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n"
            "    sys.stdout.buffer.write(chunk)\n"
        )
        variants: dict[str, Callable[[], object]] = {
            "bare subprocess.run(python noop.py)": lambda: subprocess.run(
                [sys.executable, "noop.py"], cwd=staging, check=True
            ),
        }
        runners: dict[str, SubprocessRunner] = {
            "namespaces, rlimits only (before)": SubprocessRunner(tree_limit=False),
            "namespaces + cgroup": SubprocessRunner(),
        }
        if probe_bubblewrap().usable:
            runners["bubblewrap, rlimits only"] = BubblewrapRunner(tree_limit=False)
            runners["bubblewrap + cgroup (default)"] = BubblewrapRunner()
        for label, runner in runners.items():
            variants[label] = lambda r=runner: r.run_python("noop.py", cwd=staging, limits=limits)
        for runner in runners.values():  # warm the per-process probes and caches
            runner.run_python("noop.py", cwd=staging, limits=limits)
        samples: dict[str, list[float]] = {label: [] for label in variants}
        for _ in range(repeat):
            for label, fn in variants.items():
                samples[label].append(median_ms(fn))
        bare = statistics.median(samples["bare subprocess.run(python noop.py)"])
        before = statistics.median(samples["namespaces, rlimits only (before)"])
        print(f"\npython noop.py, {repeat} runs each, interleaved:")
        print(f"{'variant':<40}{'median':>10}{'min':>10}{'start-up':>11}{'vs before':>11}")
        for label, values in samples.items():
            med = statistics.median(values)
            print(
                f"{label:<40}{med:>8.1f}ms{min(values):>8.1f}ms{med - bare:>9.1f}ms"
                f"{med / before:>10.2f}x"
            )
        if "bubblewrap + cgroup (default)" in samples:
            bwrap = statistics.median(samples["bubblewrap + cgroup (default)"])
            verdict = "under" if bwrap - bare < TARGET_MS else "OVER"
            print(
                f"bubblewrap start-up cost {bwrap - bare:.1f} ms over a bare run "
                f"({verdict} the {TARGET_MS:.0f} ms target); "
                f"{bwrap / before:.2f}x the namespace runner, {bwrap / bare:.2f}x a bare run"
            )
        print("\npytest, one test:")
        pytest_ms: dict[str, list[float]] = {label: [] for label in runners}
        for _ in range(max(3, repeat // 3)):
            for label, runner in runners.items():
                pytest_ms[label].append(
                    median_ms(lambda r=runner: r.run_pytest(cwd=staging, limits=limits))
                )
        base = statistics.median(pytest_ms["namespaces, rlimits only (before)"])
        for label, values in pytest_ms.items():
            med = statistics.median(values)
            print(f"{label:<40}{med:>8.1f}ms{med / base:>10.2f}x")
        default = list(runners.values())[-1]
        flood = [
            median_ms(lambda: default.run_python("flood.py", cwd=staging, limits=limits))
            for _ in range(3)
        ]
        print(
            f"\n100 MiB of output through {default.kind}, capped at 64 KiB: "
            f"{statistics.median(flood):.0f} ms "
            f"({100 / (statistics.median(flood) / 1000):.0f} MiB/s read and discarded)"
        )


if __name__ == "__main__":
    main()
