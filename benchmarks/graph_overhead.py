"""Framework time per step, outside model calls and sandboxed test runs.

Run: .venv/bin/python benchmarks/graph_overhead.py [--runs 5]

A 5-step plan (each step: write impl.py, write test.py, run_tests; the reflector runs the tests
again and judges) with scripted models and trivial tests, checkpointed to SQLite, with real
memory (Chroma + embeddings) and the real workspace. The time spent inside model calls and
inside sandbox subprocesses is measured and subtracted; what is left is the framework: graph,
checkpoints, context reconstruction, memory, workspace I/O, tool routing. Median over runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.graph.scripts import ExecutorScript, models, passing_attempt, step  # noqa: E402

from atom_agent import Context, run_task  # noqa: E402
from atom_agent import services as services_module  # noqa: E402
from atom_agent.sandbox import SubprocessRunner  # noqa: E402
from atom_agent.state import Plan  # noqa: E402
from atom_agent.testing import ScriptedChatModel  # noqa: E402

STEPS = 5
SPENT = {"model": 0.0, "sandbox": 0.0}


class TimedRunner(SubprocessRunner):
    """Counts the wall time of every sandboxed process."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super().run(*args, **kwargs)
        finally:
            SPENT["sandbox"] += time.perf_counter() - started


class TimedModel(ScriptedChatModel):
    """Counts the wall time of each model call as LangChain makes it (`invoke`).

    That is the provider's latency plus LangChain's own per-call work (callbacks, message
    conversion); with a scripted model only the latter is left.
    """

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return super().invoke(*args, **kwargs)
        finally:
            SPENT["model"] += time.perf_counter() - started


def one_run(root: Path) -> tuple[float, float, float]:
    plan = Plan(steps=[step(f"s{i}") for i in range(STEPS)])
    executor = ExecutorScript({(f"s{i}", 1): passing_attempt() for i in range(STEPS)})
    roles = models([plan], executor)
    timed = {
        role: TimedModel(responses=m.responses, respond=m.respond) for role, m in roles.items()
    }
    SPENT.update(model=0.0, sandbox=0.0)
    ctx = Context(workspace=str(root / "ws"))
    started = time.perf_counter()
    outcome = run_task("benchmark", ctx, models=timed)  # type: ignore[arg-type]
    total = time.perf_counter() - started
    assert outcome.status == "done", outcome
    return total, SPENT["model"], SPENT["sandbox"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    services_module.SubprocessRunner = TimedRunner  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        one_run(Path(tmp) / "warmup")  # imports, embedding model load, first Chroma open
        rows = [one_run(Path(tmp) / f"r{i}") for i in range(args.runs)]
    per_step = [(t - m - s) / STEPS * 1000 for t, m, s in rows]
    print(f"{STEPS}-step plan, {args.runs} runs (after one warm-up run)")
    print(f"total per run:      median {statistics.median(r[0] for r in rows):.2f} s")
    print(f"sandbox per run:    median {statistics.median(r[2] for r in rows):.2f} s")
    print(f"model calls per run: median {statistics.median(r[1] for r in rows) * 1000:.1f} ms")
    print(f"framework per step: median {statistics.median(per_step):.1f} ms "
          f"(min {min(per_step):.1f}, max {max(per_step):.1f}); bar: <= 30 ms")


if __name__ == "__main__":
    main()
