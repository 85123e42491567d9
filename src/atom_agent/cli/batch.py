"""`atom-agent batch TASKS.jsonl`: run many tasks, concurrent and resumable, with a summary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from .run import context_from_args, model_options

if TYPE_CHECKING:  # loaded by the command: `--help` and bad options need none of it
    from atom_agent.batch import BatchProgress


def _line(p: BatchProgress) -> Text:
    eta = p.eta_s()
    return Text(
        f"{p.done}/{p.total} done · {p.passed} passed · {p.failed} failed · {p.running} running"
        f" · {p.tokens} tokens · ${p.cost_usd:.4f}"
        + (f" · ETA {eta:.0f}s" if eta is not None else "")
        + (f" · {p.skipped} from an earlier invocation" if p.skipped else "")
        + (f" · {p.not_run} not run (batch budget spent)" if p.not_run else "")
    )


def _cmd(args: argparse.Namespace) -> int:
    from atom_agent.batch import BatchOptions, run_batch
    from atom_agent.resources import models_from_factory

    ctx = context_from_args(args)
    tasks = Path(args.tasks)
    out = (
        Path(args.out)
        if args.out
        else Path(ctx.workspace) / "batches" / tasks.stem / "results.jsonl"
    )
    console = Console(stderr=True)
    live = Live(Text("starting…"), console=console, refresh_per_second=4, transient=False)
    options = BatchOptions(
        context=ctx,
        concurrency=args.concurrency,
        isolated_memory=args.isolated_memory,
        models=models_from_factory(args.models_factory),
        on_progress=lambda p: live.update(_line(p)),
        server=args.server,
        cache=args.cache,
        max_batch_seconds=args.max_batch_seconds,
        on_retry=lambda task, result: console.print(
            f"retrying task {task.id}: it ended in error in an earlier invocation "
            f"({str(result.get('stop_reason', ''))[:200]})",
            markup=False,
        ),
    )
    with live:
        summary = run_batch(tasks, out, options)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        table = Table(title=f"Batch {tasks.name}")
        for column in ("tasks", "finished", "passed", "pass rate", "tokens", "cost", "s/task"):
            table.add_column(column)
        table.add_row(
            str(summary["tasks"]),
            str(summary["finished"]),
            str(summary["by_status"].get("done", 0)),
            f"{summary['pass_rate']:.0%}",
            str(summary["tokens"]),
            f"${summary['cost_usd']:.4f}",
            str(summary["seconds_per_task"]),
        )
        Console().print(table)
        Console().print(f"by status: {summary['by_status']}\nresults: {out}")
        if summary.get("not_run"):
            ids = ", ".join(r["id"] for r in summary["not_run"])
            Console().print(f"not run (the batch's budget was spent; run the batch again): {ids}")
    return 0 if summary["by_status"].get("done", 0) == summary["tasks"] else 1


def register(subparsers: Any) -> None:
    """Add the `batch` subcommand."""
    parser = subparsers.add_parser(
        "batch",
        help="run many tasks from a JSONL file (resumable)",
        description="Run every task of TASKS.jsonl (one JSON object per line: id, task, optional "
        "settings). Re-running the same command resumes: finished tasks are skipped, "
        "interrupted ones continue. Exit 0 when every task committed all its steps.",
    )
    parser.add_argument("tasks", help="the tasks file (JSONL)")
    parser.add_argument("--concurrency", type=int, default=1, help="tasks run at once")
    parser.add_argument(
        "--out", help="results file (default: <workspace>/batches/<name>/results.jsonl)"
    )
    parser.add_argument("--workspace", help="workspace directory")
    model_options(parser)
    parser.add_argument("--project", help="memory project id shared by the tasks")
    parser.add_argument(
        "--isolated-memory", action="store_true", help="give each task its own memory project"
    )
    parser.add_argument("--models-factory", help="module:callable returning the chat model(s)")
    parser.add_argument(
        "--cache", help="replay cache file: model calls recorded there are answered from it"
    )
    parser.add_argument(
        "--server",
        help="a LangGraph Server URL whose workers run the tasks (langgraph dev, Platform)",
    )
    parser.add_argument(
        "--max-batch-seconds",
        type=float,
        help="wall-clock budget of the whole batch: tasks not started by then are recorded as "
        "not run (a later invocation runs them); a running task stops at it too",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=_cmd)
