"""The plain answer and the contract side by side against one after the other, on a model server.

A task planned without a call (one function or class) needs the plain answer and the step's
contract, which do not depend on each other. Where the model answers requests side by side (an
API, a model server with several slots), ``Context.parallel_calls`` 2 (the default for a
served model) asks both at once; 1 asks them one after the other. This runs the same tasks both
ways through one ``llama-server`` with two slots, alternating the two arms task by task so a
drift of the machine's speed falls on both, and prints per arm the tasks passed (by the set's
oracle, or each HumanEval problem's own ``check()``), the median and mean seconds per task, the
tokens, and the seconds ratio; per task both runs' seconds:

    python benchmarks/calls_alongside.py --server $(cat .venv/llama-server.path) \
        --workspace DIR [--limit 10]                                   # HumanEval 0..9
    python benchmarks/calls_alongside.py --server … --workspace DIR \
        --tasks ../shared/devtasks/tasks.jsonl --only d-rle,d-slug     # a set with its oracle

The binary is the one ``make llama-server`` builds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from devtasks_eval import oracle  # noqa: E402  (this folder is on sys.path)
from tests.servers import free_port, stop, wait_http_ok  # noqa: E402

from atom_agent import Context, run_task  # noqa: E402
from atom_agent.evals.humaneval import load_problems, score, task_text  # noqa: E402
from atom_agent.evals.runner import committed_source  # noqa: E402
from atom_agent.models.weights import resolve_local_weights  # noqa: E402
from atom_agent.sandbox import default_runner  # noqa: E402
from atom_agent.workspace import Workspace  # noqa: E402

SERVED = "openai:qwen2.5-coder-1.5b-instruct"
ARMS = {"one_at_a_time": 1, "side_by_side": 2}


def _server(binary: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [binary, "-m", str(resolve_local_weights()), "--jinja", "--host", "127.0.0.1",
            "--port", str(port), "-c", "16384", "-t", "2", "--parallel", "2"]  # fmt: skip
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    wait_http_ok(f"{base}/health", proc, log, timeout_s=180)
    return proc, f"{base}/v1"


@dataclass(frozen=True)
class Task:
    id: str
    text: str
    problem: Any = None
    """The HumanEval problem (scored by its check()); None: the set's oracle scores it."""


def _tasks(args: argparse.Namespace) -> list[Task]:
    if args.tasks is None:
        return [Task(p.task_id.replace("/", "-"), task_text(p), p)
                for p in load_problems(limit=args.limit)]  # fmt: skip
    rows = [json.loads(x) for x in args.tasks.read_text().splitlines() if x.strip()]
    wanted = set(args.only.split(",")) if args.only else None
    return [Task(r["id"], r["task"]) for r in rows if wanted is None or r["id"] in wanted]


def _row(workspace: Path, arm: str, task: Task, base_url: str) -> dict[str, Any]:
    # One memory per task and arm: an arm never recalls what the other's run learned.
    ctx = Context(model=SERVED, base_url=base_url, workspace=str(workspace),
                  project_id=f"{arm}.{task.id}", parallel_calls=ARMS[arm],
                  ask_user=False)  # fmt: skip
    started = time.monotonic()
    outcome = run_task(task.text, ctx, run_id=f"{arm}.{task.id}")
    seconds = time.monotonic() - started
    passed = None
    if task.problem is not None:
        source = committed_source(Workspace(ctx.workspace), outcome.run_id, task.problem)
        passed = bool(source) and score(task.problem, source or "", default_runner()).passed
    calls = json.loads((Path(outcome.run_dir) / "run.json").read_text()).get("calls") or {}
    return {"task": task.id, "arm": arm, "status": outcome.status, "passed": passed,
            "seconds": round(seconds, 1), "tokens": int(outcome.usage.get("total_tokens", 0)),
            "calls": {k: v.get("calls") for k, v in calls.items()}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the llama-server binary")
    parser.add_argument("--workspace", required=True, type=Path)
    parser.add_argument("--limit", type=int, default=10, help="HumanEval problems 0..limit-1")
    parser.add_argument("--tasks", type=Path, help="a JSONL set (id, task) instead of HumanEval")
    parser.add_argument("--only", default="", help="comma-separated task ids of --tasks")
    parser.add_argument("--oracle", type=Path, help="the set's oracle (default: oracle.py beside)")
    args = parser.parse_args()
    args.workspace = args.workspace.resolve()
    args.workspace.mkdir(parents=True, exist_ok=True)
    tasks = _tasks(args)
    proc, base_url = _server(args.server, args.workspace / "server.log")
    rows: list[dict[str, Any]] = []
    try:
        for i, task in enumerate(tasks):
            arms = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))  # ABBA: drift on both
            for arm in arms:
                row = _row(args.workspace, arm, task, base_url)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        stop(proc)
    if args.tasks is not None:
        script = args.oracle or args.tasks.with_name("oracle.py")
        for arm in ARMS:
            verdicts = oracle(args.workspace, arm, script.resolve())
            for row in rows:
                if row["arm"] == arm:
                    row["passed"] = verdicts.get(row["task"], False)
    (args.workspace / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        mine = [r for r in rows if r["arm"] == arm]
        seconds = [r["seconds"] for r in mine]
        summary[arm] = {"passed": sum(bool(r["passed"]) for r in mine), "tasks": len(mine),
                        "median_s": round(statistics.median(seconds), 1),
                        "mean_s": round(statistics.fmean(seconds), 1),
                        "tokens": round(statistics.fmean(r["tokens"] for r in mine))}  # fmt: skip
    one, two = summary["one_at_a_time"], summary["side_by_side"]
    print(json.dumps(summary))
    print(f"side by side / one at a time: median {two['median_s'] / one['median_s']:.2f}x, "
          f"mean {two['mean_s'] / one['mean_s']:.2f}x; passed {two['passed']} vs "
          f"{one['passed']} of {one['tasks']}")  # fmt: skip


if __name__ == "__main__":
    main()
