"""Measure the sandbox's cost: start-up per run (with and without namespaces), output throughput.

Run: ``.venv/bin/python benchmarks/sandbox_overhead.py``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from atom_agent.sandbox import Limits, SubprocessRunner, probe_isolation


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def show(label: str, samples: list[float]) -> None:
    print(
        f"{label:<46} median {statistics.median(samples):7.1f} ms   "
        f"min {min(samples):7.1f} ms   (n={len(samples)})"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        (staging / "noop.py").write_text("pass\n")
        (staging / "flood.py").write_text(
            "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n"
            "    sys.stdout.buffer.write(chunk)\n"
        )
        (staging / "test_one.py").write_text("def test_one():\n    assert True\n")
        limits = Limits(timeout_s=60.0)
        print("isolation:", probe_isolation(False))
        bare = timed(
            lambda: subprocess.run([sys.executable, "noop.py"], cwd=staging, check=True), 10
        )
        show("plain subprocess.run(python noop.py)", bare)
        for isolate in (True, False):
            each = SubprocessRunner(isolate=isolate)
            samples = timed(lambda r=each: r.run_python("noop.py", cwd=staging, limits=limits), 10)
            show(f"SubprocessRunner.run_python (isolate={isolate})", samples)
        runner = SubprocessRunner()
        samples = timed(lambda: runner.run_pytest(cwd=staging, limits=limits), 5)
        show("SubprocessRunner.run_pytest (1 test)", samples)
        samples = timed(lambda: runner.run_python("flood.py", cwd=staging, limits=limits), 3)
        show("100 MiB of output, capped at 64 KiB", samples)
        print(f"  -> {100 / (statistics.median(samples) / 1000):.0f} MiB/s read and discarded")


if __name__ == "__main__":
    main()
