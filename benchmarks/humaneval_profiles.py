"""HumanEval side by side, one run: the plain call, and the agent on each profile and server.

    python benchmarks/humaneval_profiles.py DIR --limit 40 --arms small,standard,server \\
        --base-url http://127.0.0.1:8080/v1 --cache FILE

Arms: ``small`` (today's default for the embedded model: whole-file drafts), ``standard``
(the ReAct tool loop, in-process), ``server`` (the standard profile on ``openai:`` through an
OpenAI-compatible server at --base-url, e.g. llama.cpp's llama-server on the same GGUF);
``small-norecall`` and ``standard-norecall``: the same with no memory recalled into a prompt
(``memory_recall_limit=0``; problems run in order and share one memory per arm). The
single-shot baseline (one plain call of the task text) runs with the first arm; with
``--completion``, HumanEval's own completion prompt is asked once too (``completion``: the
single shot of the literature, the whole function and nothing else), first. Each arm works in
``DIR/<arm>/`` (its runs and its eval.json) and resumes there; the table goes to
``DIR/profiles.json``: pass@1, tokens, mean and median seconds, model and tool calls per task,
broken and recovered tool calls, tool-limit hits, the largest prompt against the window, and
the problems each arm fixed or broke against the plain call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from langchain_core.messages import HumanMessage  # noqa: E402
from loop_figures import arm_line, purpose_line, run_figures  # noqa: E402

from atom_agent.context import Context  # noqa: E402
from atom_agent.evals.humaneval import Problem, extract_code, load_problems, score  # noqa: E402
from atom_agent.evals.runner import run_humaneval  # noqa: E402
from atom_agent.models.registry import load_chat_model  # noqa: E402
from atom_agent.sandbox import default_runner  # noqa: E402

COMPLETION = (
    "Complete this Python function. Reply with the whole function in one ```python block, "
    "nothing else.\n\n```python\n{prompt}```"
)
"""HumanEval's completion prompt, asked once (greedy): the single shot of the literature."""

ARMS = ("small", "standard", "server", "small-norecall", "standard-norecall")


def arm_context(arm: str, ws: Path, args: argparse.Namespace) -> Context:
    """The Context of one agent arm (its own workspace)."""
    base = {"workspace": str(ws), "max_attempts": args.max_attempts, "max_replans": 0,
            "ask_user": False}  # fmt: skip
    if arm.endswith("-norecall"):
        arm, base["memory_recall_limit"] = arm.removesuffix("-norecall"), 0
    if arm == "server":
        if not args.base_url:
            raise SystemExit("the server arm needs --base-url (an OpenAI-compatible server)")
        return Context(model=f"openai:{args.served_model}", base_url=args.base_url,
                       model_profile="standard", **base)  # fmt: skip
    return Context(model=args.model, model_profile=arm, **base)


def completion_arm(problems: list[Problem], args: argparse.Namespace) -> dict[str, Any]:
    """Each problem asked once with :data:`COMPLETION`; resumes from ``DIR/completion.jsonl``."""
    path = args.out / "completion.jsonl"
    done = {}
    if path.exists():
        done = {r["id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}
    todo = [p for p in problems if p.task_id not in done]
    if todo:
        model = load_chat_model(args.model, base_url=args.base_url if args.model != "local" else "")
        runner = default_runner()
        with path.open("a") as out:
            for problem in todo:
                started = time.monotonic()
                reply = model.invoke([HumanMessage(COMPLETION.format(prompt=problem.prompt))])
                seconds = time.monotonic() - started
                usage = reply.usage_metadata or {}
                found = score(problem, extract_code(reply.text, problem), runner)
                tokens = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
                row = {"id": problem.task_id, "passed": found.passed, "seconds": seconds,
                       "tokens": tokens}  # fmt: skip
                done[problem.task_id] = row
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"completion: {problem.task_id} {found.passed} {seconds:.1f}s", flush=True)
    return {p.task_id: done[p.task_id] for p in problems}


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


def arm_rows(arm_dir: Path, key: str) -> dict[str, dict[str, Any]]:
    """Per problem: passed, tokens, seconds (and, for an agent arm, its run's figures)."""
    data = json.loads((arm_dir / "evals" / "humaneval" / "eval.json").read_text())
    rows: dict[str, dict[str, Any]] = {}
    for p in data["problems"]:
        row = {
            "passed": bool(p.get(f"{key}_passed")),
            "tokens": int(p.get(f"{key}_tokens") or 0),
            "seconds": float(p.get(f"{key}_seconds") or 0.0),
        }
        if key == "agent":
            slug = p["task_id"].replace("/", "-")
            row.update(run_figures(arm_dir / "runs" / f"humaneval.{slug}"))
            row["id"] = p["task_id"]
        rows[p["task_id"]] = row
    return rows


def summarise(rows: dict[str, dict[str, Any]], plain: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One arm's line of the table."""
    n = len(rows) or 1
    seconds = [r["seconds"] for r in rows.values()]
    out: dict[str, Any] = {
        "pass@1": round(sum(r["passed"] for r in rows.values()) / n, 3),
        "tokens_per_task": round(sum(r["tokens"] for r in rows.values()) / n),
        "seconds_mean": round(sum(seconds) / n, 2),
        "seconds_median": _median(seconds),
    }
    if plain and rows is not plain:
        out["fixed"] = [k for k, r in rows.items() if r["passed"] and not plain[k]["passed"]]
        out["broken"] = [k for k, r in rows.items() if plain[k]["passed"] and not r["passed"]]
        base = _median([plain[k]["seconds"] for k in rows])
        out["median_vs_plain"] = round(out["seconds_median"] / base, 2) if base else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--ids", help="comma-separated ids instead of --limit")
    parser.add_argument("--arms", default="small,standard")
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--served-model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--cache", help="replay cache file shared by the arms")
    parser.add_argument("--completion", action="store_true",
                        help="ask HumanEval's completion prompt once, first")  # fmt: skip
    args = parser.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    unknown = set(arms) - set(ARMS)
    if unknown:
        raise SystemExit(f"unknown arm(s) {sorted(unknown)}; arms: {', '.join(ARMS)}")
    problems = load_problems(args.ids.split(",") if args.ids else None, args.limit)
    table: dict[str, Any] = {}
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    args.out.mkdir(parents=True, exist_ok=True)
    completion = completion_arm(problems, args) if args.completion else {}
    for i, arm in enumerate(arms):
        ws = (args.out / arm).resolve()
        ctx = arm_context(arm, ws, args)
        run_humaneval(problems, ctx, ws / "evals" / "humaneval", baseline=i == 0, warm=False,
                      on_progress=lambda line, a=arm: print(f"{a}: {line}", flush=True),
                      cache=args.cache)  # fmt: skip
        if i == 0:
            rows["plain"] = arm_rows(ws, "baseline")
        rows[arm] = arm_rows(ws, "agent")
    if completion:
        rows["completion"] = completion
    for name, arm_table in rows.items():
        table[name] = summarise(arm_table, rows.get("plain", {}))
        if completion and name != "completion":
            mean = sum(r["seconds"] for r in completion.values()) / len(completion)
            table[name]["mean_vs_completion"] = round(table[name]["seconds_mean"] / mean, 2)
        print(f"{name}: {json.dumps(table[name])}")
        if name not in ("plain", "completion"):
            print(arm_line(name, list(arm_table.values())))
            print(purpose_line(name, list(arm_table.values())))
    table["per_problem"] = {
        name: {k: r["passed"] for k, r in arm_table.items()} for name, arm_table in rows.items()
    }
    (args.out / "profiles.json").write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
