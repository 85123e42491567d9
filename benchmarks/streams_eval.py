"""Task streams side by side in one run: rules said once, kept (or not) by later tasks.

A stream is a JSONL batch of tasks on one project; its first task states standing rules, later
tasks do not repeat them, one task changes a rule. The streams' oracle (checks the agent never
sees) scores each task's own request (*task*) and the earlier rules still in force (*rules*).
Arms, one model loaded once, each in its own workspace ``<workspace>/<arm>/``:

- plain: one plain call per task (``selection.candidates.ask_plain``), the floor;
- told: one plain call per task of the oracle's ``told`` stream (the rules in force written
  before each task), what the model does when simply told;
- zero: memory on, one plain call per task: the stream's tasks in order share one memory
  project, each task's rules are remembered and the rules in force ride in its text
  (``nodes.rules.carry_rules``), as the agent's first call (candidate zero) asks it;
- off: the agent, every task with its own memory (``--isolated-memory``);
- on: the agent, the stream's tasks in order sharing one memory project (one per stream).

Prints per arm: task x/N, rule checks x/M of the later tasks, tokens and seconds per task,
and for the agent arms the share of later tasks whose calls carried every rule in force (the
rules earlier runs of the stream stated, less those they superseded) and no superseded one:

    python benchmarks/streams_eval.py ../shared/streams --workspace streams_ws
    python benchmarks/streams_eval.py ../shared/streams --arms off,on --only s-money

Each arm appends a line per task to ``<workspace>/<arm>/results.jsonl`` and skips the tasks
already there, so a stopped evaluation resumes; the table goes to ``streams_eval.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from atom_agent.batch import BatchOptions, run_batch  # noqa: E402
from atom_agent.context import Context  # noqa: E402
from atom_agent.nodes.planner import task_names  # noqa: E402
from atom_agent.nodes.rules import carry_rules  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.selection.candidates import ask_plain  # noqa: E402

ARMS = ("plain", "told", "zero", "off", "on")


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def _tasks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def plain_arm(
    res: Resources, stream: Path, ws: Path, stem: str, ctx: Context | None = None
) -> dict[str, dict[str, Any]]:
    """One greedy plain call per task, its code where the oracle reads a run's.

    With `ctx` (the zero arm): memory on, the stream's tasks sharing one memory project; each
    task's rules are remembered and the rules in force ride in its text, as a run carries them.
    """
    path = ws / "results.jsonl"
    done = _rows(path)
    model = res.model("executor")
    memory = (res.for_context(ctx.replace(workspace=str(ws), project_id=f"streams.zero.{stem}"))
              if ctx is not None else None)  # fmt: skip
    for item in _tasks(stream):
        key = f"{stem}.{item['id']}"
        if key in done:
            continue
        t0 = time.monotonic()
        text, info = carry_rules(memory, key, item["task"]) if memory else (item["task"], None)
        answer = ask_plain(model, text, task_names(text))
        usage = getattr(answer.reply, "usage_metadata", None) or {}
        run = ws / "runs" / key
        folder = run / "steps" / "step1" / "committed" / "artifacts"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "impl.py").write_text(answer.source, encoding="utf-8")
        row = {"id": key, "tokens": int(usage.get("total_tokens", 0)),
               "seconds": round(time.monotonic() - t0, 2)}  # fmt: skip
        if info is not None:
            (run / "run.json").write_text(json.dumps({"task": item["task"], "rules": info}))
            row["carried"] = len(info.get("carried", []))
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        done[key] = row
        carried = f", {row['carried']} rules carried" if info is not None else ""
        print(f"{ws.name} {key}: {row['tokens']} tokens, {row['seconds']} s{carried}", flush=True)
    return done


def agent_arm(
    res: Resources, stream: Path, ws: Path, stem: str, ctx: Context, *, shared: bool
) -> dict[str, dict[str, Any]]:
    """The agent on the stream's tasks in order (a batch; its results file resumes it)."""
    named = ws / f"{stem}.jsonl"
    named.write_text(stream.read_text())
    results = ws / f"{stem}.results.jsonl"
    arm_ctx = ctx.replace(workspace=str(ws), project_id=f"streams.{ws.name}.{stem}")
    run_batch(named, results, BatchOptions(arm_ctx, 1, isolated_memory=not shared, resources=res))
    rows: dict[str, dict[str, Any]] = {}
    for task_id, row in _rows(results).items():
        key = f"{stem}.{task_id}"
        rows[key] = {"id": key, "status": row.get("status"),
                     "tokens": int((row.get("usage") or {}).get("total_tokens", 0)),
                     "seconds": float(row.get("duration_s") or 0.0),
                     "own_plain": _own_plain_seconds(ws / "runs" / key / "run.json")}  # fmt: skip
    return rows


def _own_plain_seconds(run_json: Path) -> float | None:
    """The seconds of the run's own plain answer (candidate zero), from its run.json."""
    if not run_json.is_file():
        return None
    calls = json.loads(run_json.read_text()).get("calls") or {}
    seconds = (calls.get("plain") or {}).get("seconds")
    return float(seconds) if seconds else None


def carried_in_force(ws: Path, stem: str, ids: list[str]) -> tuple[int, int, list[str]]:
    """Later tasks whose run carried every rule in force and no other.

    In force: what earlier runs of the stream stated, less what they or this task superseded.
    """
    stated: list[str] = []
    superseded: set[str] = set()
    good, total, notes = 0, 0, []
    for i, task_id in enumerate(ids):
        run_json = ws / "runs" / f"{stem}.{task_id}" / "run.json"
        info = json.loads(run_json.read_text()).get("rules") or {} if run_json.exists() else {}
        # What this task's own words changed is no longer in force for it either.
        superseded |= {s["id"] for s in info.get("superseded") or []}
        if i > 0:
            total += 1
            want = [r for r in stated if r not in superseded]
            got = list(info.get("carried") or [])
            if sorted(got) == sorted(want):
                good += 1
            else:
                notes.append(f"{task_id}: carried {len(got)}, in force {len(want)}")
        stated += list(info.get("stated") or [])
    return good, total, notes


def score(ws: Path, stream: Path, oracle: Path) -> list[dict[str, Any]]:
    """The oracle's rows for a stream's runs in `ws`."""
    out = ws / f"{stream.stem}.oracle.json"
    subprocess.run([sys.executable, str(oracle), "score", str(ws), str(stream), "--json", str(out)],
                   capture_output=True, text=True, check=False)  # fmt: skip
    return json.loads(out.read_text()) if out.exists() else []


def summary(rows: dict[str, dict[str, Any]], scored: list[dict[str, Any]]) -> dict[str, Any]:
    """task x/N, rule checks x/M (later tasks), tokens and seconds per task."""
    later = [r for r in scored if r.get("rules") is not None]
    parts = [p for r in later for _, p in r.get("parts") or []]
    seconds = [r["seconds"] for r in rows.values()]
    return {
        "task": sum(bool(r["task"]) for r in scored),
        "tasks": len(scored),
        "rule_checks": sum(bool(p) for p in parts),
        "rule_checks_of": len(parts),
        "rules_tasks": sum(bool(r["rules"]) for r in later),
        "later_tasks": len(later),
        "tokens_per_task": round(sum(r["tokens"] for r in rows.values()) / (len(rows) or 1)),
        "seconds_mean": round(sum(seconds) / (len(seconds) or 1), 1),
        "seconds_median": round(statistics.median(seconds), 1) if seconds else None,
        **_per_own_plain(rows),
    }


def _per_own_plain(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An agent arm's run seconds over the seconds of each run's own plain answer.

    The run's time limit is a multiple of that answer, so two arms whose answers differ in
    length (one follows rules that ask for more code) compare fairly on this ratio.
    """
    ratios = [r["seconds"] / r["own_plain"] for r in rows.values() if r.get("own_plain")]
    if not ratios:
        return {}
    return {"per_own_plain_mean": round(statistics.mean(ratios), 2),
            "per_own_plain_median": round(statistics.median(ratios), 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("streams", type=Path, help="a folder of STREAM.jsonl files and oracle.py")
    parser.add_argument("--workspace", type=Path, default=Path("streams_ws"))
    parser.add_argument("--model", default="local")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--only", default="", help="comma-separated stream names (s-money,...)")
    parser.add_argument("--settings", default="{}", help="Context fields for the agent (JSON)")
    args = parser.parse_args()
    arms = [a for a in args.arms.split(",") if a]
    if unknown := set(arms) - set(ARMS):
        raise SystemExit(f"unknown arms {sorted(unknown)}: choose from {ARMS}")
    oracle = args.streams / "oracle.py"
    if not oracle.is_file():
        raise SystemExit(f"no oracle.py in {args.streams}")
    streams = sorted(args.streams.glob("*.jsonl"))
    if args.only:
        streams = [s for s in streams if s.stem in set(args.only.split(","))]
    root = args.workspace.resolve()
    told_dir = root / "told-streams"
    told_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(workspace=str(root), model=args.model,
                  **{"ask_user": False, **json.loads(args.settings)})  # fmt: skip
    rows: dict[str, dict[str, dict[str, Any]]] = {arm: {} for arm in arms}
    scored: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    carried: dict[str, list[int]] = {arm: [0, 0] for arm in arms if arm in ("zero", "off", "on")}
    with Resources(ctx) as res:
        for stream in streams:  # the told streams first: every arm reads them in order
            text = subprocess.run([sys.executable, str(oracle), "told", str(stream)],
                                  capture_output=True, text=True, check=True).stdout  # fmt: skip
            (told_dir / stream.name).write_text(text)
        # Stream by stream, the arms in turn and their order reversed on every other stream
        # (ABBA): a machine whose speed drifts during the evaluation slows every arm alike.
        for index, stream in enumerate(streams):
            for arm in arms if index % 2 == 0 else arms[::-1]:
                ws = root / arm
                ws.mkdir(parents=True, exist_ok=True)
                if arm in ("plain", "told"):
                    source = stream if arm == "plain" else told_dir / stream.name
                    rows[arm] |= plain_arm(res, source, ws, stream.stem)
                elif arm == "zero":
                    rows[arm] |= plain_arm(res, stream, ws, stream.stem, ctx)
                else:
                    rows[arm] |= agent_arm(res, stream, ws, stream.stem, ctx, shared=arm == "on")
                if arm in carried:
                    ids = [t["id"] for t in _tasks(stream)]
                    good, total, notes = carried_in_force(ws, stream.stem, ids)
                    carried[arm][0] += good
                    carried[arm][1] += total
                    for note in notes:
                        print(f"{arm} {stream.stem} {note}")
                scored[arm] += score(ws, stream, oracle)
    table: dict[str, Any] = {}
    for arm in arms:
        table[arm] = summary(rows[arm], scored[arm])
        if arm in carried:
            table[arm]["carried_every_rule_in_force"] = f"{carried[arm][0]}/{carried[arm][1]}"
        t = table[arm]
        print(f"{arm}: task {t['task']}/{t['tasks']}, rule checks {t['rule_checks']}/"
              f"{t['rule_checks_of']} (later tasks with every rule {t['rules_tasks']}/"
              f"{t['later_tasks']}), {t['tokens_per_task']} tokens and {t['seconds_mean']} s "
              f"(median {t['seconds_median']}) per task"
              + (f", carried every rule in force {t['carried_every_rule_in_force']}"
                 if "carried_every_rule_in_force" in t else "")
              + (f", {t['per_own_plain_mean']}x its own plain answer's s (median "
                 f"{t['per_own_plain_median']}x)" if "per_own_plain_mean" in t else "")
              )  # fmt: skip
    if "off" in table and "on" in table and table["off"]["seconds_mean"]:
        ratio = table["on"]["seconds_mean"] / table["off"]["seconds_mean"]
        median = (table["on"]["seconds_median"] or 0) / (table["off"]["seconds_median"] or 1)
        print(f"on: {ratio:.2f}x the seconds per task of off (medians {median:.2f}x)")
    table["per_task"] = {arm: {r["id"]: {"task": r["task"], "rules": r["rules"],
                                          "parts": r.get("parts")} for r in scored[arm]}
                         for arm in arms}  # fmt: skip
    (root / "streams_eval.json").write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
