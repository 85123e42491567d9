"""Batch speed-up with concurrency, models answering after a fixed latency (as remote ones do).

Run: .venv/bin/python benchmarks/batch_scaling.py [--tasks 16] [--latency 1.0]

16 one-step tasks, each: plan, write impl.py, write test.py, run_tests, final reply (model calls of
`latency` seconds each) plus two sandboxed pytest runs. Concurrency 1 and 8 in one run; prints
wall times, the speed-up, and checks that every task has exactly one result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.graph import factory  # noqa: E402

from atom_agent import Context  # noqa: E402
from atom_agent.batch import BatchOptions, run_batch  # noqa: E402


def timed(tasks: Path, root: Path, concurrency: int) -> tuple[float, list[str]]:
    out = root / f"c{concurrency}" / "results.jsonl"
    ctx = Context(workspace=str(root / f"ws{concurrency}"))
    started = time.perf_counter()
    summary = run_batch(tasks, out, BatchOptions(ctx, concurrency, models=factory.batch_models()))
    elapsed = time.perf_counter() - started
    assert summary["by_status"] == {"done": summary["tasks"]}, summary
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()]
    return elapsed, ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    os.environ["ATOM_TEST_LATENCY"] = str(args.latency)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tasks = root / "tasks.jsonl"
        tasks.write_text(
            "".join(
                json.dumps({"id": f"t{i}", "task": f"task {i}"}) + "\n" for i in range(args.tasks)
            )
        )
        serial, ids1 = timed(tasks, root, 1)
        parallel, ids8 = timed(tasks, root, 8)
    expected = sorted(f"t{i}" for i in range(args.tasks))
    print(f"{args.tasks} tasks, executor latency {args.latency}s per call")
    print(f"concurrency 1: {serial:.1f} s")
    print(f"concurrency 8: {parallel:.1f} s")
    print(f"speed-up: {serial / parallel:.2f}x (bar: >= 6x)")
    print(f"results exactly once: c1 {sorted(ids1) == expected}, c8 {sorted(ids8) == expected}")


if __name__ == "__main__":
    main()
