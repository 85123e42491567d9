"""Development tasks, side by side in one run: one plain call, warming, and the agent.

Every arm uses one loaded model and is scored by the devtasks oracle (checks the agent never
sees). Prints, per arm, tasks solved, tokens and seconds per task (mean, median) and per
solved task, and which tasks the agent fixed or broke against the plain call:

    python benchmarks/devtasks_eval.py ../shared/devtasks/tasks.jsonl --workspace dev_ws
    python benchmarks/devtasks_eval.py benchmarks/heldout/tasks.jsonl \\
        --oracle benchmarks/heldout/oracle.py --workspace held_ws      # another set, its oracle

- plain: the task asked once (``selection.candidates.PLAIN_TASK``, greedy), exactly as candidate
  zero is.
- warming: plain calls at rising temperature until every check the task's clauses state
  passes (the last sample is kept when none does); its first sample is the plain call's.
- agent: ``atom-agent batch`` on the same tasks (runs ``tasks.<id>``), with `--settings`, each
  task with its own memory (``--isolated-memory``).
- memory: the agent as configured with one memory for all the tasks, run in order (runs
  ``memory.<id>``): what a user's later tasks recall from the earlier ones. Beside ``agent`` it
  shows what memory costs or wins on tasks that share no rule.

Each arm appends a line per task to ``<workspace>/devtasks_<arm>.jsonl`` and skips the tasks
already there, so a stopped evaluation resumes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from loop_figures import arm_line, purpose_line, run_figures  # noqa: E402

from atom_agent.batch import BatchOptions, run_batch  # noqa: E402
from atom_agent.context import Context  # noqa: E402
from atom_agent.models.replay import ReplayCache  # noqa: E402
from atom_agent.nodes.planner import task_names  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.selection.candidates import ask_plain, meets_clauses  # noqa: E402
from atom_agent.verification.clauses import task_clauses  # noqa: E402

WARMING = (0.3, 0.6, 0.9, 1.2)
ORACLE = Path(__file__).resolve().parents[2] / "shared" / "devtasks" / "oracle.py"


def _tokens(reply: Any) -> int:
    usage = getattr(reply, "usage_metadata", None) or {}
    return int(usage.get("total_tokens", 0))


def _write(ws: Path, prefix: str, task_id: str, source: str) -> None:
    folder = ws / "runs" / f"{prefix}.{task_id}" / "steps" / "step1" / "committed" / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "impl.py").write_text(source, encoding="utf-8")


def _done(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def plain_arm(res: Resources, tasks: list[dict[str, Any]], ws: Path) -> dict[str, dict[str, Any]]:
    """One greedy plain call per task."""
    path = ws / "devtasks_plain.jsonl"
    done = _done(path)
    model = res.model("executor")
    for item in tasks:
        if item["id"] in done:
            continue
        t0 = time.monotonic()
        answer = ask_plain(model, item["task"], task_names(item["task"]))
        row = {
            "id": item["id"],
            "tokens": _tokens(answer.reply),
            "seconds": round(time.monotonic() - t0, 2),
            "source": answer.source,
        }
        _write(ws, "plain", item["id"], answer.source)
        _append(path, row)
        done[item["id"]] = row
        print(f"plain {item['id']}: {row['tokens']} tokens, {row['seconds']} s", flush=True)
    return done


def warming_arm(
    res: Resources, tasks: list[dict[str, Any]], ws: Path, plain: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Rising temperature until the task's stated checks pass (first sample: the plain call)."""
    from langchain_core.messages import HumanMessage

    from atom_agent.models.sampling import sample
    from atom_agent.replies import complete_from_task, extract_code
    from atom_agent.selection.candidates import PLAIN_TASK

    path = ws / "devtasks_warming.jsonl"
    done = _done(path)
    model = res.model("executor")
    for item in tasks:
        if item["id"] in done:
            continue
        names = task_names(item["task"])
        clauses = task_clauses(item["task"], names=names)
        first = plain[item["id"]]
        source, tokens, seconds, samples = first["source"], first["tokens"], first["seconds"], 1
        t0 = time.monotonic()
        for temperature in (None, *WARMING):
            if temperature is not None:
                reply = sample(
                    model,
                    [HumanMessage(PLAIN_TASK.format(task=item["task"].strip()))],
                    temperature,
                    purpose="task_sample",
                )
                tokens += _tokens(reply)
                samples += 1
                source = complete_from_task(extract_code(reply.text), item["task"], names)
            with tempfile.TemporaryDirectory() as tmp:
                report = meets_clauses(source, clauses, folder=Path(tmp), runner=res.runner,
                                       limits=res.limits, defines=names)  # fmt: skip
            if report is None or report.all_passed():
                break
        row = {
            "id": item["id"],
            "tokens": tokens,
            "seconds": round(seconds + time.monotonic() - t0, 2),
            "samples": samples,
        }
        _write(ws, "warming", item["id"], source)
        _append(path, row)
        done[item["id"]] = row
        print(f"warming {item['id']}: {samples} samples, {tokens} tokens", flush=True)
    return done


AGENT_ARMS = ("agent", "memory", "small", "standard", "server")
"""Arms that run the agent: as configured (``agent``; ``memory``: one memory across the tasks),
on one profile, or the standard profile through an OpenAI-compatible server (``server``:
--base-url)."""


def arm_context(ctx: Context, arm: str, args: argparse.Namespace) -> Context:
    """The Context of an agent arm."""
    if arm in ("small", "standard"):
        return ctx.replace(model_profile=arm)
    if arm == "server":
        if not args.base_url:
            raise SystemExit("the server arm needs --base-url (an OpenAI-compatible server)")
        return ctx.replace(model_profile="standard", model=f"openai:{args.served_model}",
                           base_url=args.base_url)  # fmt: skip
    return ctx


def prefix_of(arm: str) -> str:
    """The run-id prefix (and oracle prefix) of an arm's runs."""
    return "tasks" if arm == "agent" else arm


def agent_arm(
    res: Resources, tasks_path: Path, ws: Path, arm: str = "agent", ctx: Context | None = None
) -> dict[str, dict[str, Any]]:
    """The agent on every task (a batch; its results file resumes it)."""
    named = tasks_path.with_name(f"{prefix_of(arm)}.jsonl")
    if named != tasks_path:
        named.write_text(tasks_path.read_text())
    results = ws / (
        "devtasks_agent_results.jsonl" if arm == "agent" else f"devtasks_{arm}_results.jsonl"
    )
    # Memory isolated per task *and arm*: an arm must not recall what another arm's run of the
    # same task learned (each arm starts from what one user's first run would have). The memory
    # arm shares one memory across its own tasks only.
    arm_ctx = (ctx or res.ctx).replace(project_id=f"{(ctx or res.ctx).project_id}.{arm}")
    options = BatchOptions(arm_ctx, 1, isolated_memory=arm != "memory", resources=res)
    run_batch(named, results, options)
    rows = _done(results)
    return {
        k: {
            "id": k,
            "tokens": int((v.get("usage") or {}).get("total_tokens", 0)),
            "seconds": float(v.get("duration_s") or 0.0),
            "status": v.get("status"),
            **{
                key: int((v.get("usage") or {}).get(key, 0))
                for key in ("input_tokens", "prefill_computed", "prefill_without_prefix_cache")
            },
            **run_figures(ws / "runs" / f"{prefix_of(arm)}.{k}"),
        }
        for k, v in rows.items()
    }


def prefill_line(rows: dict[str, dict[str, Any]]) -> str:
    """Prompt tokens sent, computed, and computed without the prefix cache, summed."""
    sent, computed, without = (
        sum(r.get(key, 0) for r in rows.values())
        for key in ("input_tokens", "prefill_computed", "prefill_without_prefix_cache")
    )
    if not computed:
        return "prefill: not reported (a model without prefill figures, or replayed calls)"
    return (
        f"prefill: {sent} prompt tokens sent, {computed} computed with the prefix cache, "
        f"{without} without it (only the previous call's KV reused): "
        f"{computed / (without or 1):.2f}x"
    )


def oracle(ws: Path, prefix: str, script: Path = ORACLE) -> dict[str, bool]:
    """PASS/FAIL per task id from the set's oracle (the devtasks one unless told another)."""
    if not script.is_file():  # every task would read as failed
        raise SystemExit(f"the oracle is not at {script}: put ../shared beside the repo")
    out = subprocess.run(
        [sys.executable, str(script), str(ws), prefix], capture_output=True, text=True, check=False
    ).stdout
    verdicts: dict[str, bool] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in ("PASS", "FAIL"):
            verdicts[parts[0].rstrip(":")] = parts[1] == "PASS"
    return verdicts


def summary(rows: dict[str, dict[str, Any]], passed: dict[str, bool]) -> dict[str, Any]:
    """Solved, tokens and seconds per task and per solved task."""
    ids = list(rows)
    solved = [i for i in ids if passed.get(i)]
    tokens = [rows[i]["tokens"] for i in ids]
    seconds = [rows[i]["seconds"] for i in ids]
    return {
        "solved": len(solved),
        "tasks": len(ids),
        "tokens_per_task": round(sum(tokens) / (len(ids) or 1)),
        "seconds_mean": round(sum(seconds) / (len(ids) or 1), 1),
        "seconds_median": round(statistics.median(seconds), 1) if seconds else None,
        "tokens_per_solved": round(sum(tokens) / len(solved)) if solved else None,
        "seconds_per_solved": round(sum(seconds) / len(solved), 1) if solved else None,
    }


def memory_line(
    table: dict[str, Any], verdicts: dict[str, dict[str, bool]],
    rows: dict[str, dict[str, dict[str, Any]]], ids: list[str],
) -> str:  # fmt: skip
    """The memory arm against the agent's: tasks lost and won, seconds, memories recalled."""
    lost = [i for i in ids if verdicts["agent"].get(i) and not verdicts["memory"].get(i)]
    won = [i for i in ids if verdicts["memory"].get(i) and not verdicts["agent"].get(i)]
    mean = (table["memory"]["seconds_mean"] or 0) / (table["agent"]["seconds_mean"] or 1)
    recalled = [rows["memory"][i].get("recalled", 0) for i in ids if i in rows["memory"]]
    carried = sum(1 for n in recalled if n)
    table["memory_vs_agent"] = {"lost": lost, "won": won, "mean_seconds": round(mean, 2),
                                "runs_that_recalled": carried}  # fmt: skip
    return (
        f"memory vs agent: lost {lost}, won {won}, mean seconds {mean:.2f}x; "
        f"{carried} of {len(recalled)} runs recalled a memory ({sum(recalled)} in all)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--workspace", type=Path, default=Path("dev_ws"))
    parser.add_argument("--model", default="local")
    parser.add_argument("--arms", default="plain,warming,agent")
    parser.add_argument("--only", default="", help="comma-separated task ids")
    parser.add_argument("--settings", default="{}", help="Context fields for the agent (JSON)")
    parser.add_argument("--oracle", type=Path, default=ORACLE,
                        help="the set's oracle: WORKSPACE PREFIX -> '<id>: PASS|FAIL'")  # fmt: skip
    parser.add_argument("--cache", help="replay cache file (model calls recorded there replay)")
    parser.add_argument("--base-url", default="", help="OpenAI-compatible server (server arm)")
    parser.add_argument("--served-model", default="qwen2.5-coder-1.5b-instruct",
                        help="the model name the server arm asks for")  # fmt: skip
    args = parser.parse_args()
    arms = args.arms.split(",")
    tasks = [json.loads(x) for x in args.tasks.read_text().splitlines() if x.strip()]
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t["id"] in wanted]
    ws = args.workspace.resolve()
    ws.mkdir(parents=True, exist_ok=True)
    tasks_path = ws / "tasks.jsonl"
    tasks_path.write_text("".join(json.dumps({"id": t["id"], "task": t["task"]}) + "\n"
                                  for t in tasks))  # fmt: skip
    ctx = Context(workspace=str(ws), model="local" if args.model == "local" else args.model,
                  **{"ask_user": False, **json.loads(args.settings)})  # fmt: skip
    table: dict[str, Any] = {}
    replay = ReplayCache(args.cache) if args.cache else None
    with Resources(ctx, cache=replay) as res:
        rows: dict[str, dict[str, dict[str, Any]]] = {}
        if "plain" in arms or "warming" in arms:
            rows["plain"] = plain_arm(res, tasks, ws)
        if "warming" in arms:
            rows["warming"] = warming_arm(res, tasks, ws, rows["plain"])
        for arm in (a for a in AGENT_ARMS if a in arms):
            rows[arm] = agent_arm(res, tasks_path, ws, arm, arm_context(ctx, arm, args))
    ids = [t["id"] for t in tasks]
    verdicts = {arm: oracle(ws, prefix_of(arm), args.oracle.resolve()) for arm in rows}
    for arm, arm_rows in rows.items():
        mine = {i: arm_rows[i] for i in ids if i in arm_rows}
        table[arm] = summary(mine, verdicts[arm])
        print(f"{arm}: {json.dumps(table[arm])}")
    for arm in (a for a in AGENT_ARMS if a in rows):
        print(prefill_line(rows[arm]))
        print(arm_line(arm, [rows[arm][i] for i in ids if i in rows[arm]]))
        print(purpose_line(arm, [rows[arm][i] for i in ids if i in rows[arm]]))
        if "plain" in rows:
            fixed = [i for i in ids if verdicts[arm].get(i) and not verdicts["plain"].get(i)]
            broken = [i for i in ids if verdicts["plain"].get(i) and not verdicts[arm].get(i)]
            suffix = "" if arm == "agent" else f"_{arm}"
            table[f"fixed_by_agent{suffix}"], table[f"broken_by_agent{suffix}"] = fixed, broken
            print(f"{arm}: fixed {fixed}; broken {broken}")
            plain_median = table["plain"]["seconds_median"] or 0
            if plain_median:
                ratio = (table[arm]["seconds_median"] or 0) / plain_median
                table[arm]["median_vs_plain"] = round(ratio, 2)
                print(f"{arm}: median seconds {ratio:.2f}x the plain call's")
    if "agent" in rows and "memory" in rows:
        print(memory_line(table, verdicts, rows, ids))
    for i in ids:
        cells = [f"{arm} {'PASS' if verdicts[arm].get(i) else 'fail'} "
                 f"{rows[arm].get(i, {}).get('tokens', '-')} tok "
                 f"{rows[arm].get(i, {}).get('seconds', '-')} s" for arm in rows]  # fmt: skip
        print(f"{i}: " + " | ".join(cells))
    table["per_task"] = {arm: {i: verdicts[arm].get(i, False) for i in ids} for arm in rows}
    if replay is not None:
        table["model_calls"] = replay.counts()
        print(f"model calls: {replay.counts()}")
    (ws / "devtasks_eval.json").write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
