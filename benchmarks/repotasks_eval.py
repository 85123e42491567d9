"""Repo tasks, side by side in one run: one plain call with the target's file, and the agent.

Both arms use one loaded model and are scored by the repotasks oracle (the project's own tests
that were taken out of the repo, then the rest of its suite as a regression check; neither arm
sees them). Prints, per arm, tasks solved, tokens and seconds per task (mean, median) and per
solved task, which tasks the agent fixed or broke against the plain call, and how many of the
agent's committed changes broke the regression suite:

    python benchmarks/repotasks_eval.py /work/repotasks --workspace repo_ws --arms plain,agent

OUT is what ``shared/repotasks/prepare.py OUT`` wrote (``OUT/tasks.jsonl``, ``OUT/<id>/``).

- plain: the task and the target's whole file (the benchmark knows which file from task.json;
  the agent is not told), asked once, greedy, for the complete new file (``PLAIN_PROMPT``). The
  reply's code replaces the file in a copy of the repo (``<workspace>/plain/<id>/repo``); a
  reply without a code block leaves it unchanged. A prompt larger than the model's window is a
  ``fail`` of the plain call (reason ``WINDOW_FAIL``), not an error.
- agent: ``run_batch`` on each task with ``repo`` = the prepared repo and `--settings`; the
  worktree its run.json names (``project.worktree``, the committed result) is scored.

Each arm appends a line per task to ``<workspace>/repotasks_<arm>.jsonl`` and skips the tasks
already there (a line with status ``error`` is tried again), so a stopped evaluation resumes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402

from atom_agent.batch import BatchOptions, ResultsFile, run_batch  # noqa: E402
from atom_agent.context import Context  # noqa: E402
from atom_agent.errors import ContextWindowError, InvalidInputError  # noqa: E402
from atom_agent.models.replay import ReplayCache  # noqa: E402
from atom_agent.replies import extract_code  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.workspace import Workspace  # noqa: E402

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "repotasks" / "oracle.py"
PLAIN_PROMPT = """{task}

Here is {file}:

```python
{source}
```

Reply with the complete new content of {file} in one ```python block."""
WINDOW_FAIL = "file larger than the model's window"
BATCH_NAME = "repotasks"
"""The agent's tasks file stem: runs are ``repotasks.<id>``, as ``atom-agent batch`` names them."""
SKIP_COPY = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", ".pytest_cache")

Batch = Callable[[Path, Path, BatchOptions], Any]


def estimate_tokens(text: str) -> int:
    """Tokens of `text`, under-estimated (code runs nearer 3 characters per token than 4).

    Under, on purpose: a prompt is only judged too large without calling the model when even
    this count exceeds the window; otherwise the model's own check decides.
    """
    return len(text) // 4


def load_tasks(out: Path, only: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The tasks of OUT/tasks.jsonl with their folder, absolute repo and target file."""
    tasks = []
    for line in (out / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        if only and item["id"] not in only:
            continue
        task_dir = (out / item["id"]).resolve()
        meta = json.loads((task_dir / "task.json").read_text(encoding="utf-8"))
        item["dir"] = task_dir
        item["repo"] = (out / item["repo"]).resolve()
        item["file"] = meta["target"]["file"]
        tasks.append(item)
    return tasks


def _done(path: Path) -> dict[str, dict[str, Any]]:
    """Rows already recorded, by id; an ``error`` row is not an outcome, so it is left to redo."""
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows if r.get("status") != "error"}


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def score(oracle: Path, candidate: Path, task_dir: Path) -> dict[str, Any]:
    """The oracle's verdict on a candidate repo: pass, its line, oracle and regression counts."""
    with tempfile.TemporaryDirectory(prefix="repotasks-eval-") as tmp:
        report = Path(tmp) / "result.json"
        proc = subprocess.run(
            [sys.executable, str(oracle), str(candidate), str(task_dir), "--json", str(report)],
            capture_output=True,
            text=True,
            check=False,
        )
        results = json.loads(report.read_text()) if report.exists() else []
    line = next((x for x in proc.stdout.splitlines() if x.strip()), "")
    if not results:
        tail = (proc.stdout + proc.stderr)[-1000:]
        return {"pass": False, "oracle_line": line, "oracle_error": tail or "no result"}
    result = results[0]
    row: dict[str, Any] = {"pass": result.get("verdict") == "PASS", "oracle_line": line}
    if result.get("error"):
        row["oracle_error"] = result["error"]
    for key in ("oracle", "regression"):
        counts = result.get(key) or {}
        row[key] = {
            k: counts.get(k, 0) for k in ("passed", "failed", "skipped", "timeout") if k in counts
        }
        row[key]["failures"] = list(counts.get("failures", []))[:20]
    return row


def reply_code(text: str) -> str | None:
    """The file a reply gives back: its longest fenced block that parses (None: no block)."""
    if "```" not in text:
        return None
    # tests=True keeps the whole block: a module's own test helpers are part of the file.
    return extract_code(text, tests=True) or None


def _tokens(reply: Any) -> int:
    usage = getattr(reply, "usage_metadata", None) or {}
    return int(usage.get("total_tokens", 0))


def plain_call(
    model: BaseChatModel, item: dict[str, Any], ws: Path, *, window: int | None
) -> dict[str, Any]:
    """One greedy call for the whole file; writes the candidate repo; the row without a score."""
    source = (item["repo"] / item["file"]).read_text(encoding="utf-8")
    prompt = PLAIN_PROMPT.format(task=item["task"].strip(), file=item["file"], source=source)
    folder = ws / "plain" / item["id"]
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(item["repo"], folder / "repo", ignore=SKIP_COPY)
    row: dict[str, Any] = {"id": item["id"], "tokens": 0, "seconds": 0.0, "status": "done"}
    # Room for the whole file again (code runs near 3 characters a token; 2 leaves slack); the
    # model's window caps it.
    max_tokens = len(source) // 2 + 256
    if window is not None:
        room = window - estimate_tokens(prompt)
        if room <= 0:
            return {**row, "status": "fail", "reason": WINDOW_FAIL}
        max_tokens = min(max_tokens, room)
    t0 = time.monotonic()
    try:
        reply = model.invoke([HumanMessage(prompt)], temperature=0.0, max_tokens=max_tokens)
    except ContextWindowError:
        return {**row, "status": "fail", "reason": WINDOW_FAIL}
    row["seconds"] = round(time.monotonic() - t0, 2)
    row["tokens"] = _tokens(reply)
    row["max_tokens"] = max_tokens
    finish = (reply.response_metadata or {}).get("finish_reason")
    if finish:
        row["finish"] = finish
    (folder / "reply.md").write_text(reply.text, encoding="utf-8")
    code = reply_code(reply.text)
    if code is None:
        row["reason"] = "no code block in the reply (file unchanged)"
    else:
        (folder / "repo" / item["file"]).write_text(code, encoding="utf-8")
    return row


def plain_arm(
    model: BaseChatModel,
    tasks: list[dict[str, Any]],
    ws: Path,
    oracle: Path,
    *,
    window: int | None = None,
) -> dict[str, dict[str, Any]]:
    """The plain call on every task not yet in ``repotasks_plain.jsonl``, each scored."""
    path = ws / "repotasks_plain.jsonl"
    done = _done(path)
    for item in tasks:
        if item["id"] in done:
            continue
        row = plain_call(model, item, ws, window=window)
        row.update(score(oracle, ws / "plain" / item["id"] / "repo", item["dir"]))
        _append(path, row)
        done[item["id"]] = row
        print(f"plain {_line(row)}", flush=True)
    return done


def _project(ws: Path, run_id: str) -> dict[str, Any] | None:
    """The ``project`` record of a run's run.json (None: no run.json or no project in it)."""
    run_json = Workspace(ws).runs_dir / run_id / "run.json"
    if not run_json.is_file():
        return None
    info = json.loads(run_json.read_text(encoding="utf-8"))
    project = info.get("project")
    if not isinstance(project, dict) or not project.get("worktree"):
        return None
    # The branch's head is recorded where the run hands it back (the deliverable), not here.
    return {**project, "head": (info.get("deliverable") or {}).get("head")}


def agent_task(
    res: Resources, item: dict[str, Any], ws: Path, oracle: Path, *, batch: Batch = run_batch
) -> dict[str, Any]:
    """The agent on one task (a one-line batch, so it is scored as soon as it ends)."""
    line = {"id": item["id"], "task": item["task"], "repo": str(item["repo"])}
    one = ws / "agent_task" / f"{BATCH_NAME}.jsonl"
    one.parent.mkdir(parents=True, exist_ok=True)
    one.write_text(json.dumps(line) + "\n", encoding="utf-8")
    results = ws / "repotasks_agent_results.jsonl"
    row: dict[str, Any] = {"id": item["id"], "tokens": 0, "seconds": 0.0, "pass": False}
    try:
        batch(one, results, BatchOptions(res.ctx, 1, isolated_memory=True, resources=res))
    except InvalidInputError as exc:  # e.g. a batch that does not know `repo` (no project mode)
        return {**row, "status": "error", "error": f"batch refused the task: {exc}"}
    result = ResultsFile(results).read().get(item["id"])
    if result is None:
        return {**row, "status": "error", "error": "the batch recorded no result"}
    row["tokens"] = int((result.get("usage") or {}).get("total_tokens", 0))
    row["seconds"] = float(result.get("duration_s") or 0.0)
    row["status"] = str(result.get("status"))
    row["stop_reason"] = result.get("stop_reason", "")
    if row["status"] == "error":
        return {**row, "error": f"the run crashed: {row['stop_reason']}"}
    project = _project(ws, str(result.get("run_id", "")))
    if project is None:
        return {**row, "status": "error", "error": "run.json has no project (no project mode?)"}
    row["worktree"] = project["worktree"]
    row["committed"] = bool(project.get("head")) and project.get("head") != project.get("base")
    row.update(score(oracle, Path(project["worktree"]), item["dir"]))
    return row


def agent_arm(
    res: Resources, tasks: list[dict[str, Any]], ws: Path, oracle: Path, *, batch: Batch = run_batch
) -> dict[str, dict[str, Any]]:
    """The agent on every task not yet in ``repotasks_agent.jsonl``, each scored."""
    path = ws / "repotasks_agent.jsonl"
    done = _done(path)
    # The whole set in the batch format, so `atom-agent batch` can run the arm the same way.
    (ws / f"{BATCH_NAME}.jsonl").write_text(
        "".join(
            json.dumps({"id": t["id"], "task": t["task"], "repo": str(t["repo"])}) + "\n"
            for t in tasks
        ),
        encoding="utf-8",
    )
    for item in tasks:
        if item["id"] in done:
            continue
        row = agent_task(res, item, ws, oracle, batch=batch)
        _append(path, row)
        done[item["id"]] = row
        print(f"agent {_line(row)}", flush=True)
    return done


def _line(row: dict[str, Any]) -> str:
    verdict = "PASS" if row.get("pass") else "error" if row.get("status") == "error" else "fail"
    why = row.get("error") or row.get("reason") or row.get("oracle_line", "")
    return f"{row['id']}: {verdict}, {row['tokens']} tokens, {row['seconds']} s ({why})"


def regression_broken(row: dict[str, Any]) -> bool:
    """A committed change that the regression suite fails on (failures or a timeout)."""
    regression = row.get("regression") or {}
    broke = bool(regression.get("failed")) or bool(regression.get("timeout"))
    return bool(row.get("committed")) and broke


def summary(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Solved, tokens and seconds per task and per solved task (errors count as tasks)."""
    ids = list(rows)
    solved = [i for i in ids if rows[i].get("pass")]
    tokens = [rows[i]["tokens"] for i in ids]
    seconds = [rows[i]["seconds"] for i in ids]
    return {
        "solved": len(solved),
        "tasks": len(ids),
        "errors": sum(rows[i].get("status") == "error" for i in ids),
        "tokens_per_task": round(sum(tokens) / (len(ids) or 1)),
        "seconds_mean": round(sum(seconds) / (len(ids) or 1), 1),
        "seconds_median": round(statistics.median(seconds), 1) if seconds else None,
        "tokens_per_solved": round(sum(tokens) / len(solved)) if solved else None,
        "seconds_per_solved": round(sum(seconds) / len(solved), 1) if solved else None,
    }


def compare(
    ids: list[str], plain: dict[str, dict[str, Any]], agent: dict[str, dict[str, Any]]
) -> dict[str, list[str]]:
    """Tasks the agent solves that the plain call does not (fixed), and the reverse (broken)."""
    both = [i for i in ids if i in plain and i in agent]
    return {
        "fixed_by_agent": [i for i in both if agent[i].get("pass") and not plain[i].get("pass")],
        "broken_by_agent": [i for i in both if plain[i].get("pass") and not agent[i].get("pass")],
    }


def report(ids: list[str], rows: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Prints the table and returns it (the same figures, as written to the JSON file)."""
    table: dict[str, Any] = {}
    for arm, arm_rows in rows.items():
        mine = {i: arm_rows[i] for i in ids if i in arm_rows}
        table[arm] = summary(mine)
        print(f"{arm}: {json.dumps(table[arm])}")
    if "agent" in rows:
        broke = [i for i in ids if regression_broken(rows["agent"].get(i, {}))]
        table["regression_broken_by_commit"] = broke
        print(f"agent: regression broken by a committed change: {len(broke)} {broke}")
    if "agent" in rows and "plain" in rows:
        table.update(compare(ids, rows["plain"], rows["agent"]))
        print(
            f"fixed by the agent: {table['fixed_by_agent']}; "
            f"broken by the agent: {table['broken_by_agent']}"
        )
    for i in ids:
        cells = []
        for arm, arm_rows in rows.items():
            row = arm_rows.get(i)
            if row is None:
                cells.append(f"{arm} -")
                continue
            verdict = (
                "PASS" if row.get("pass") else "error" if row.get("status") == "error" else "fail"
            )
            cells.append(f"{arm} {verdict} {row['tokens']} tok {row['seconds']} s")
        print(f"{i}: " + " | ".join(cells))
    table["per_task"] = {
        arm: {i: bool(arm_rows.get(i, {}).get("pass")) for i in ids}
        for arm, arm_rows in rows.items()
    }
    return table


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the folder prepare.py wrote (OUT)")
    parser.add_argument("--workspace", type=Path, default=Path("repo_ws"))
    parser.add_argument("--model", default="local")
    parser.add_argument("--arms", default="plain,agent", help="comma-separated: plain, agent")
    parser.add_argument("--only", default="", help="comma-separated task ids")
    parser.add_argument("--settings", default="{}", help="Context fields for the agent (JSON)")
    parser.add_argument("--cache", help="replay cache file (model calls recorded there replay)")
    parser.add_argument("--oracle", type=Path, default=ORACLE, help="repotasks oracle.py")
    args = parser.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    unknown = set(arms) - {"plain", "agent"}
    if unknown:
        parser.error(f"unknown arm(s) {sorted(unknown)}; arms: plain, agent")
    if not args.oracle.is_file():
        parser.error(f"no oracle at {args.oracle} (give --oracle PATH)")
    tasks = load_tasks(args.out, [i for i in args.only.split(",") if i])
    ws = args.workspace.resolve()
    ws.mkdir(parents=True, exist_ok=True)
    ctx = Context(workspace=str(ws), model=args.model, **json.loads(args.settings))
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    replay = ReplayCache(args.cache) if args.cache else None
    with Resources(ctx, cache=replay) as res:
        if "plain" in arms:
            model = res.model("executor")
            window = getattr(model, "n_ctx", None)  # the local model's; others: no cap known
            rows["plain"] = plain_arm(model, tasks, ws, args.oracle, window=window)
        if "agent" in arms:
            rows["agent"] = agent_arm(res, tasks, ws, args.oracle)
    table = report([t["id"] for t in tasks], rows)
    if replay is not None:
        table["model_calls"] = replay.counts()
        print(f"model calls: {replay.counts()}")
    (ws / "repotasks_eval.json").write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
