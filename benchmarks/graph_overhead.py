"""Framework time per step, outside model calls and sandboxed test runs.

Run: .venv/bin/python benchmarks/graph_overhead.py [--runs 5] [--cold-runs 2] [--memories N]
     [--events]

A 5-step plan (each step: write impl.py, write test.py, run_tests; the reflector runs the tests
again and decides) with scripted models and trivial tests, checkpointed to SQLite, with real
memory (Chroma + embeddings) and the real workspace. The time spent inside model calls and
inside sandbox subprocesses is measured and subtracted; what is left is the framework: graph,
checkpoints, context reconstruction, memory, workspace I/O, tool calls. Median over runs.

Two settings:

- steady: every run on one Resources (one workspace, one set of models, one open store), as a
  batch or a script running many tasks has; the warm-up run pays the imports, the embedding
  model load and the first open of the store. Every run compiles its own graph.
- cold: each run on new Resources in a new workspace (the first run of a project, or a CLI
  call): it also pays creating and opening the memory store and the checkpoint database.

"Model calls" are timed around the chat model's ``invoke`` (the provider's latency plus
LangChain's per-call work: callbacks, tracing metadata, message conversion); the strict figure
times only the provider part (``_generate``), so LangChain's per-call work counts as framework.
CPU figures are this process's CPU time (all threads) outside the same model and sandbox calls.
With ``--memories N`` the project holds N lessons, so every attempt recalls some and every
commit reinforces the ones it used. With ``--events`` the run streams its events to a handler,
as the CLI's progress display does (scripts and batch runs pass none).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph._branch import BranchSpec  # noqa: E402
from langgraph.pregel._loop import SyncPregelLoop  # noqa: E402
from tests.unit.graph.scripts import (  # noqa: E402
    ExecutorScript,
    models,
    passing_attempt,
    planner_model,
    step,
)

from atom_agent import Context, run_task  # noqa: E402
from atom_agent.memory import MemoryManager  # noqa: E402
from atom_agent.nodes.executor import node as executor_module  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.sandbox import SubprocessRunner  # noqa: E402
from atom_agent.session import SessionContext  # noqa: E402
from atom_agent.state import Plan  # noqa: E402
from atom_agent.testing import ScriptedChatModel  # noqa: E402
from atom_agent.tools import calls as calls_module  # noqa: E402
from atom_agent.workspace import Workspace  # noqa: E402

STEPS = 5
BAR_MS = 30.0
EXCLUDED = ("model", "sandbox")
"""Parts that are not framework time (the definition of the figure)."""
BACKGROUND = {
    "checkpoints": "background thread",
    "memory": "mostly the finish node's write, beside the deliverable's tests",
}
"""Parts that run beside others: LangGraph's checkpoint writes (durability "async"), and the
run's memory write, which the finish node makes while the deliverable's tests run. Their wall
time overlaps the rest."""


@dataclass
class Frame:
    """A part being timed: the wall time of the parts nested in it, and its thread."""

    thread: int
    nested_wall: float = 0.0
    nested_cpu: float = 0.0


_CURRENT: ContextVar[Frame | None] = ContextVar("benchmark_part", default=None)


@dataclass
class Clock:
    """Exclusive time per part: a part nested in another is not counted twice.

    Nesting follows the context (LangGraph runs nodes and tool calls in worker threads with
    the caller's context), so the agent loop excludes the model and tool calls it waits for.
    CPU is per thread (``thread_time``): a part's CPU excludes only what nested parts spent
    in its own thread.
    """

    wall: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        """Forget what was counted."""
        with self.lock:
            self.wall.clear()
            self.cpu.clear()

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Count the time inside the block to `name`, minus the parts nested in it."""
        parent = _CURRENT.get()
        frame = Frame(threading.get_ident())
        token = _CURRENT.set(frame)
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            yield
        finally:
            spent_wall = time.perf_counter() - wall
            spent_cpu = time.thread_time() - cpu
            _CURRENT.reset(token)
            with self.lock:
                if parent is not None:
                    parent.nested_wall += spent_wall
                    if parent.thread == frame.thread:
                        parent.nested_cpu += spent_cpu
                self.wall[name] += spent_wall - frame.nested_wall
                self.cpu[name] += spent_cpu - frame.nested_cpu


CLOCK = Clock()


def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, counting its time to part `name`."""

    @functools.wraps(method)  # keeps the signature, which LangGraph inspects for `runtime`
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with CLOCK.part(name):
            return method(*args, **kwargs)

    return wrapper


class TimedRunner(SubprocessRunner):
    """Counts every sandboxed process (start, wait, output) as sandbox time."""

    run = timed("sandbox", SubprocessRunner.run)


class TimedModel(ScriptedChatModel):
    """Counts each model call as LangChain makes it (`invoke`) as model time.

    That is the provider's latency plus LangChain's own per-call work (callbacks, message
    conversion); with a scripted model only the latter is left. `_generate` (the provider's
    part) is counted separately, for the strict figure.
    """

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        """Timed :meth:`ScriptedChatModel.invoke`."""
        with CLOCK.part("model"):
            return super().invoke(*args, **kwargs)

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        with CLOCK.part("provider"):
            return super()._generate(*args, **kwargs)


def instrument() -> None:
    """Count the framework's parts (for the breakdown; the totals do not depend on it)."""
    executor_module._run = timed("agent loop", executor_module._run)  # type: ignore[assignment]
    executor_module.reconstruct_context = timed(  # type: ignore[assignment]
        "context reconstruction", executor_module.reconstruct_context
    )
    calls_module.execute = timed("tool calls", calls_module.execute)  # type: ignore[assignment]
    for name in ("recall", "remember", "remember_many", "apply", "forget"):
        setattr(MemoryManager, name, timed("memory", getattr(MemoryManager, name)))
    for name in ("put", "put_writes", "get_tuple", "delete_thread", "setup"):
        setattr(SqliteSaver, name, timed("checkpoints", getattr(SqliteSaver, name)))
    for name in (
        "create_run", "update_run", "write_plan", "create_step", "update_step", "new_attempt",
        "write_history", "write_verdict", "commit", "write_report", "list_attempts",
        "dependency_artifacts",
    ):  # fmt: skip
        setattr(Workspace, name, timed("workspace files", getattr(Workspace, name)))
    # LangGraph's own loop (the run's graph and the executor's agent): planning each
    # superstep's tasks, applying their writes, making checkpoints, routing.
    for name in ("tick", "after_tick", "put_writes", "_put_checkpoint"):
        setattr(SyncPregelLoop, name, timed("graph loop", getattr(SyncPregelLoop, name)))
    BranchSpec._route = timed("graph loop", BranchSpec._route)  # type: ignore[method-assign]
    SubprocessRunner.run_pytest = timed(  # type: ignore[method-assign]
        "sandbox set-up", SubprocessRunner.run_pytest
    )


@dataclass
class Run:
    """What one run cost, in seconds."""

    wall: float
    cpu: float
    parts_wall: dict[str, float]
    parts_cpu: dict[str, float]

    def framework(self, *, strict: bool = False, cpu: bool = False) -> float:
        """Framework time per step in ms (strict: LangChain's per-call work counts too)."""
        total, parts = (self.cpu, self.parts_cpu) if cpu else (self.wall, self.parts_wall)
        # Parts are exclusive: "model" is LangChain's work around the provider's `_generate`.
        excluded = parts["sandbox"] + parts["provider"] + (0.0 if strict else parts["model"])
        return (total - excluded) / STEPS * 1000

    def model_wall(self) -> float:
        """Seconds inside model calls (LangChain's work and the provider's)."""
        return self.parts_wall["model"] + self.parts_wall["provider"]


def seed_memory(ctx: Context, count: int) -> None:
    """Give the project `count` lessons, so attempts recall (and commits reinforce) some."""
    if count <= 0:
        return
    session = SessionContext(session_id="benchmark-seed", project_id=ctx.project_id)
    with MemoryManager.from_context(ctx) as memory:
        memory.remember_many(
            session,
            [
                {
                    "content": f"Step s{i % STEPS}: lesson {i} - test add() with case {i}.",
                    "type": "lesson_learned",
                    "confidence": 0.8,
                }
                for i in range(count)
            ],
        )


def scripted_models() -> dict[str, TimedModel]:
    """Scripted planner and executor that can serve any number of runs."""
    plan = Plan(steps=[step(f"s{i}") for i in range(STEPS)])
    executor = ExecutorScript({(f"s{i}", 1): passing_attempt() for i in range(STEPS)})
    roles = models([plan], executor)
    roles["planner"] = planner_model([plan], cycle=True)
    return {
        role: TimedModel(responses=m.responses, respond=m.respond, cycle=True)
        for role, m in roles.items()
    }


def one_run(res: Resources, *, events: bool = False) -> Run:
    """One 5-step run on `res` (its workspace, its models), with an event handler or not."""
    handler = (lambda mode, chunk: None) if events else None
    CLOCK.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = run_task("benchmark", resources=res, on_event=handler)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert outcome.status == "done", outcome
    return Run(wall, cpu, dict(CLOCK.wall), dict(CLOCK.cpu))


def report(title: str, rows: list[Run], *, breakdown: bool) -> None:
    """Print the medians of `rows`."""

    def med(values: Any) -> float:
        return statistics.median(list(values))

    print(f"\n{title}: {len(rows)} runs of {STEPS} steps")
    print(f"  run total (wall):            {med(r.wall for r in rows):6.2f} s")
    print(f"  sandbox per run (wall):      {med(r.parts_wall['sandbox'] for r in rows):6.2f} s")
    model_ms = med(r.model_wall() for r in rows) * 1000
    print(f"  model calls per run (wall):  {model_ms:6.1f} ms")
    wall = [r.framework() for r in rows]
    print(
        f"  framework per step, wall:    {med(wall):6.1f} ms  (min {min(wall):.1f}, "
        f"max {max(wall):.1f}); bar <= {BAR_MS:.0f} ms"
    )
    print(f"  framework per step, CPU:     {med(r.framework(cpu=True) for r in rows):6.1f} ms")
    print(
        f"  strict (LangChain's per-call work counted): wall "
        f"{med(r.framework(strict=True) for r in rows):.1f} ms, CPU "
        f"{med(r.framework(strict=True, cpu=True) for r in rows):.1f} ms"
    )
    if breakdown:
        _breakdown(rows, med)


def _breakdown(rows: list[Run], med: Callable[[Any], float]) -> None:
    """Per-step time by part; checkpoint writes run in the background, beside the rest."""
    per_step = 1000 / STEPS
    names = sorted(
        {n for r in rows for n in r.parts_wall} - {*EXCLUDED, "provider"},
        key=lambda n: -med(r.parts_wall.get(n, 0.0) for r in rows),
    )
    print("  per step, by part (exclusive wall ms | CPU ms in the part's own thread):")
    for name in names:
        w = med(r.parts_wall.get(name, 0.0) for r in rows) * per_step
        c = med(r.parts_cpu.get(name, 0.0) for r in rows) * per_step
        note = f"  ({BACKGROUND[name]})" if name in BACKGROUND else ""
        print(f"    {name:24s} {w:6.1f} | {c:6.1f}{note}")
    foreground = [n for n in names if n not in BACKGROUND]
    rest_wall = med(
        r.framework() - sum(r.parts_wall.get(n, 0.0) for n in foreground) * per_step for r in rows
    )
    rest_cpu = med(
        r.framework(cpu=True) - sum(r.parts_cpu.get(n, 0.0) for n in names) * per_step for r in rows
    )
    print(f"    {'graph, nodes, the rest':24s} {rest_wall:6.1f} | {rest_cpu:6.1f}")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="steady runs (one workspace)")
    parser.add_argument("--cold-runs", type=int, default=2, help="runs in new workspaces")
    parser.add_argument("--memories", type=int, default=0, help="lessons in the project")
    parser.add_argument(
        "--events", action="store_true", help="stream events to a handler, as the CLI does"
    )
    args = parser.parse_args()
    instrument()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        ctx = Context(workspace=str(Path(tmp) / "ws"))
        seed_memory(ctx, args.memories)
        # Steady: one Resources for every run, as a batch or a script running many tasks has.
        with Resources(ctx, models=scripted_models(), runner=TimedRunner()) as res:  # type: ignore[arg-type]
            one_run(res, events=args.events)  # warm-up: imports, embedding model, store
            steady = [one_run(res, events=args.events) for _ in range(args.runs)]
        cold = []
        for i in range(args.cold_runs):
            fresh = Context(workspace=str(Path(tmp) / f"cold{i}"))
            seed_memory(fresh, args.memories)
            with Resources(fresh, models=scripted_models(), runner=TimedRunner()) as own:  # type: ignore[arg-type]
                cold.append(one_run(own, events=args.events))
    memories = f", {args.memories} memories in the project" if args.memories else ""
    events = ", events streamed to a handler" if args.events else ""
    report(f"steady (one workspace, one process{memories}{events})", steady, breakdown=True)
    if cold:
        report("cold (each run in a new workspace)", cold, breakdown=False)


if __name__ == "__main__":
    main()
