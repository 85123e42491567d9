"""How far generation alone could go on the devtasks: upper bounds no agent run measures.

Two arms, both scored by the hidden devtasks oracle (so neither is something the agent can do;
they say where its mechanisms could still win, and where only another model could):

- ``samples``: K replies to the single-shot prompt at one temperature (each call seeded by its
  request and how often it was asked, so K different draws); per task, how many pass the
  oracle. "pass@K > 0" is what selection by execution could reach with perfect checks.
- ``oracle-repair``: the greedy plain answer, then up to R rounds in one conversation, each told
  the oracle's first failing check verbatim ("That code was run against the task's checks:
  …") and asked for the whole module again. What repair could reach if the agent's checks were
  the oracle's.

    python benchmarks/generation_ceiling.py ../shared/devtasks/tasks.jsonl --workspace DIR \
        --arms samples,oracle-repair --samples 6 --rounds 2 --cache FILE

Writes every candidate as ``DIR/runs/<arm>.<id>/…/impl.py`` (the oracle's layout, one prefix
per draw) and a summary to ``DIR/generation_ceiling.json``; a stopped run resumes from it.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from devtasks_eval import _write  # noqa: E402  (where the oracle reads a run's code)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402

from atom_agent.context import Context  # noqa: E402
from atom_agent.models.replay import ReplayCache  # noqa: E402
from atom_agent.models.sampling import sample  # noqa: E402
from atom_agent.nodes.planner import task_names  # noqa: E402
from atom_agent.replies import complete_from_task, extract_code  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.selection.candidates import PLAIN_TASK  # noqa: E402

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "devtasks" / "oracle.py"
REPAIR = """\
That code was run against the task's checks: {failure}
Reply with the corrected whole module in one ```python block, nothing else."""


def _tokens(reply: Any) -> int:
    usage = getattr(reply, "usage_metadata", None) or {}
    return int(usage.get("output_tokens", 0))


def oracle(ws: Path, prefix: str, oracle_path: Path = ORACLE) -> dict[str, str]:
    """The oracle's line per task of runs `<prefix>.*`: "PASS" or "FAIL <first failing check>"."""
    out = subprocess.run(
        [sys.executable, str(oracle_path), str(ws), prefix],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    ).stdout
    lines: dict[str, str] = {}
    for line in out.splitlines():
        tid, sep, verdict = line.partition(": ")
        if sep and verdict.startswith(("PASS", "FAIL")):
            lines[tid] = verdict
    return lines


def code_of(reply: AIMessage, task: str, names: list[str]) -> str:
    """The module a reply holds, read the way the plain arm reads it."""
    return complete_from_task(extract_code(reply.text), task, names)


def samples_arm(
    res: Resources,
    tasks: list[dict[str, Any]],
    ws: Path,
    k: int,
    temperature: float,
    oracle_path: Path = ORACLE,
) -> dict[str, Any]:
    """K samples of the single-shot prompt per task; how many pass the oracle."""
    model = res.model("executor")
    per_task: dict[str, Any] = {}
    for j in range(k):
        prefix = f"sample{j}"
        for item in tasks:
            t0 = time.monotonic()
            names = task_names(item["task"])
            messages: list[BaseMessage] = [HumanMessage(PLAIN_TASK.format(task=item["task"]))]
            reply = sample(
                model, messages, temperature, purpose="task_sample", code_only="module", names=names
            )
            _write(ws, prefix, item["id"], code_of(reply, item["task"], names))
            row = per_task.setdefault(item["id"], {"passed": [], "tokens": 0, "seconds": 0.0})
            row["tokens"] += _tokens(reply)
            row["seconds"] += time.monotonic() - t0
        verdicts = oracle(ws, prefix, oracle_path)
        for item in tasks:
            per_task[item["id"]]["passed"].append(verdicts.get(item["id"], "") == "PASS")
        print(f"sample {j}: {sum(v == 'PASS' for v in verdicts.values())} pass", flush=True)
    return per_task


def repair_arm(
    res: Resources,
    tasks: list[dict[str, Any]],
    ws: Path,
    rounds: int,
    oracle_path: Path = ORACLE,
    temperature: float = 0.0,
) -> dict[str, Any]:
    """Greedy plain answer, then up to `rounds` repairs each told the oracle's failing check.

    The repairs are sampled at `temperature` (greedy by default); ``unchanged`` counts the
    repairs whose module is the one before it, character for character.
    """
    model = res.model("executor")
    per_task: dict[str, Any] = {}
    for item in tasks:
        t0 = time.monotonic()
        names = task_names(item["task"])
        messages: list[BaseMessage] = [HumanMessage(PLAIN_TASK.format(task=item["task"]))]
        reply = sample(model, messages, 0.0, purpose="baseline", code_only="module", names=names)
        row: dict[str, Any] = {"verdicts": [], "tokens": _tokens(reply), "unchanged": 0}
        before = None
        for r in range(rounds + 1):
            prefix = f"repair{r}"
            source = code_of(reply, item["task"], names)
            row["unchanged"] += source == before
            before = source
            _write(ws, prefix, item["id"], source)
            verdict = oracle(ws, prefix, oracle_path).get(item["id"], "FAIL no verdict")
            row["verdicts"].append(verdict)
            if verdict == "PASS" or r == rounds:
                break
            messages += [reply, HumanMessage(REPAIR.format(failure=verdict.removeprefix("FAIL ")))]
            reply = sample(
                model, messages, temperature, purpose="repair", code_only="module", names=names
            )
            row["tokens"] += _tokens(reply)
        row["seconds"] = round(time.monotonic() - t0, 1)
        per_task[item["id"]] = row
        print(f"repair {item['id']}: {row['verdicts']}", flush=True)
    return per_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--arms", default="samples,oracle-repair")
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repair-temperature", type=float, default=0.0)
    parser.add_argument("--only", default="", help="comma-separated task ids")
    parser.add_argument("--model", default="local")
    parser.add_argument("--cache", help="replay cache file")
    args = parser.parse_args()
    tasks = [json.loads(x) for x in args.tasks.read_text().splitlines() if x.strip()]
    if args.only:
        tasks = [t for t in tasks if t["id"] in set(args.only.split(","))]
    ws = args.workspace.resolve()
    ws.mkdir(parents=True, exist_ok=True)
    out = ws / "generation_ceiling.json"
    table: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    replay = ReplayCache(args.cache) if args.cache else None
    with Resources(Context(workspace=str(ws), model=args.model), cache=replay) as res:
        if "samples" in args.arms.split(",") and "samples" not in table:
            rows = samples_arm(res, tasks, ws, args.samples, args.temperature)
            table["samples"] = {"k": args.samples, "temperature": args.temperature, "tasks": rows}
            out.write_text(json.dumps(table, indent=2) + "\n")
        if "oracle-repair" in args.arms.split(",") and "oracle-repair" not in table:
            table["oracle-repair"] = {
                "rounds": args.rounds,
                "temperature": args.repair_temperature,
                "tasks": repair_arm(
                    res, tasks, ws, args.rounds, temperature=args.repair_temperature
                ),
            }
            out.write_text(json.dumps(table, indent=2) + "\n")
    if "samples" in table:
        rows = table["samples"]["tasks"]
        solved = [t for t, r in rows.items() if any(r["passed"])]
        rate = statistics.mean(sum(r["passed"]) / len(r["passed"]) for r in rows.values())
        print(
            f"samples (k={table['samples']['k']}, T={table['samples']['temperature']}): "
            f"pass@k>0 in {len(solved)}/{len(rows)} {solved}; mean pass rate {rate:.2f}"
        )
        for t, r in rows.items():
            print(f"  {t}: {sum(r['passed'])}/{len(r['passed'])} pass, {r['tokens']} out tokens")
    if "oracle-repair" in table:
        rows = table["oracle-repair"]["tasks"]
        first = [t for t, r in rows.items() if r["verdicts"][0] == "PASS"]
        solved = [t for t, r in rows.items() if r["verdicts"][-1] == "PASS"]
        unchanged = sum(r.get("unchanged", 0) for r in rows.values())
        repairs = sum(len(r["verdicts"]) - 1 for r in rows.values())
        print(
            f"oracle-repair (T={table['oracle-repair'].get('temperature', 0.0)}): "
            f"{unchanged} of {repairs} repairs handed back the same module"
        )
        print(
            f"oracle-repair: plain {len(first)}/{len(rows)}, after repair "
            f"{len(solved)}/{len(rows)} {sorted(set(solved) - set(first))}"
        )
        for t, r in rows.items():
            print(f"  {t}: " + " -> ".join(v[:70] for v in r["verdicts"]))


if __name__ == "__main__":
    main()
