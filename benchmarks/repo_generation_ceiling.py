"""How far generation alone could go on the repo tasks: upper bounds no agent run measures.

The agent's own edit request (:func:`atom_agent.nodes.project.executor.edit_request`: the task,
the other files' signatures, the documents it names, the code around the target), given the
target the benchmark knows from task.json (the agent has to find it), scored by the hidden
repotasks oracle (the project's tests of the target, then its regression suite):

- ``samples``: the greedy reply and K-1 more at one temperature (each call seeded by its
  request and how often it was asked, so different draws); per task, how many pass. "pass@K >
  0" is what selection by execution could reach with perfect checks.
- ``oracle-repair``: the greedy reply, then up to R rounds each told the oracle's failing
  tests verbatim (pytest's summary lines), in the agent's own retry wording (which no longer
  shows the previous version: repairs shown it handed it back unchanged). What a retry could
  reach if the agent's checks were the oracle's.

    python benchmarks/repo_generation_ceiling.py OUT --workspace DIR --arms samples,oracle-repair \
        --samples 6 --temperature 0.8 --rounds 2 --cache FILE

OUT is what ``shared/repotasks/prepare.py OUT`` wrote. Every candidate repo is kept as
``DIR/<arm><n>/<id>/repo``; the table goes to ``DIR/repo_generation_ceiling.json``, written
after every task, so a stopped run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation_ceiling import _tokens  # noqa: E402  (output tokens of a reply)
from repotasks_eval import SKIP_COPY, load_tasks  # noqa: E402

from atom_agent.context import Context  # noqa: E402
from atom_agent.models.replay import ReplayCache  # noqa: E402
from atom_agent.models.sampling import sample  # noqa: E402
from atom_agent.nodes.project.executor import edit_request  # noqa: E402
from atom_agent.project.edits import Edit, EditError, apply_edit, definition_of  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.state import PlanStep  # noqa: E402

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "repotasks" / "oracle.py"
ORACLE_FAILED = "The project's tests of it were run; these failed:\n{failures}"
"""The verdict a repair is told (in the agent's retry request)."""
SUMMARY_LINES = 6
"""Failing tests told to a repair: pytest's short summary lines, at most this many."""


def load_oracle(path: Path = ORACLE) -> ModuleType:
    """The repotasks oracle as a module (its ``score`` keeps pytest's output tail)."""
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("repotasks_oracle", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def step_of(item: dict[str, Any]) -> PlanStep:
    """The step the agent's planner would make for the task, its target given."""
    meta = json.loads((item["dir"] / "task.json").read_text(encoding="utf-8"))
    target = f"{meta['target']['file']}::{meta['target']['qualname']}"
    return PlanStep(
        id="s1",
        title="the target",
        description=item["task"],
        acceptance_criteria=[item["task"]],
        target=target,
    )


def failures_of(result: dict[str, Any]) -> str:
    """What the oracle says failed: pytest's summary lines and `E` lines, else the test names."""
    lines: list[str] = []
    for key in ("oracle", "regression"):
        tail = (result.get(key) or {}).get("tail", "")
        errors = [x for x in tail.splitlines() if x.startswith("E ")][:SUMMARY_LINES]
        summary = [x for x in tail.splitlines() if x.startswith(("FAILED", "ERROR"))]
        lines += summary[:SUMMARY_LINES] + errors
    if lines:
        return "\n".join(lines)
    return result.get("error") or "tests failed: " + ", ".join(
        (result.get("oracle") or {}).get("failures", [])[:SUMMARY_LINES]
    )


def candidate(item: dict[str, Any], step: PlanStep, reply_text: str) -> tuple[str | None, str]:
    """The target's file with the reply's definition spliced in (None and why when unusable)."""
    path, _, qualname = step.target.partition("::")
    original = (item["repo"] / path).read_text(encoding="utf-8")
    try:
        return apply_edit(original, Edit(qualname, definition_of(reply_text, qualname))), ""
    except EditError as exc:
        return None, str(exc)


def scored(
    oracle: ModuleType, item: dict[str, Any], step: PlanStep, edited: str | None, where: Path
) -> dict[str, Any]:
    """The oracle's verdict on the repo with `edited` as the target's file, kept at `where`."""
    if edited is None:
        return {"verdict": "FAIL", "error": "no usable definition"}
    if where.exists():
        shutil.rmtree(where)
    shutil.copytree(item["repo"], where, ignore=SKIP_COPY)
    (where / step.target.partition("::")[0]).write_text(edited, encoding="utf-8")
    result: dict[str, Any] = oracle.score(where, item["dir"], sys.executable)
    return result


def counts(result: dict[str, Any]) -> str:
    """``oracle p/n regression p/n`` of a verdict."""
    if result.get("error"):
        return f"({result['error'][:60]})"
    parts = []
    for key in ("oracle", "regression"):
        c = result.get(key) or {}
        parts.append(f"{key} {c.get('passed', 0)}/{c.get('passed', 0) + c.get('failed', 0)}")
    return " ".join(parts)


def samples_task(
    res: Resources, oracle: ModuleType, item: dict[str, Any], ws: Path, k: int, temperature: float
) -> dict[str, Any]:
    """Greedy and k-1 warmer replies to the agent's first edit request; each one scored."""
    model = res.model("executor")
    step = step_of(item)
    messages = edit_request(item["repo"], item["task"], step)
    row: dict[str, Any] = {"verdicts": [], "tokens": 0, "seconds": 0.0, "distinct": 0}
    seen: set[str] = set()
    for j in range(k):
        t0 = time.monotonic()
        reply = sample(
            model, messages, 0.0 if j == 0 else temperature, purpose="task_sample", code_only="code"
        )
        edited, why = candidate(item, step, str(reply.content))
        fresh = edited is not None and edited not in seen
        seen.add(edited or "")
        row["distinct"] += fresh
        result = (
            scored(oracle, item, step, edited, ws / f"sample{j}" / item["id"] / "repo")
            if fresh or edited is None
            else row["verdicts"][-1]
        )
        if why:
            result = {"verdict": "FAIL", "error": why}
        row["verdicts"].append({"verdict": result["verdict"], "counts": counts(result)})
        row["tokens"] += _tokens(reply)
        row["seconds"] = round(row["seconds"] + time.monotonic() - t0, 1)
        print(f"  {item['id']} sample {j}: {result['verdict']} {counts(result)}", flush=True)
    return row


def repair_task(
    res: Resources, oracle: ModuleType, item: dict[str, Any], ws: Path, rounds: int
) -> dict[str, Any]:
    """The greedy reply, then up to `rounds` greedy repairs told the oracle's failing tests."""
    model = res.model("executor")
    step = step_of(item)
    row: dict[str, Any] = {"verdicts": [], "tokens": 0, "seconds": 0.0, "unchanged": 0}
    t0 = time.monotonic()
    why = ""
    before: str | None = None
    for r in range(rounds + 1):
        messages = edit_request(item["repo"], item["task"], step, why)
        reply = sample(model, messages, 0.0, purpose="repair", code_only="code")
        row["tokens"] += _tokens(reply)
        edited, error = candidate(item, step, str(reply.content))
        row["unchanged"] += r > 0 and edited == before
        before = edited
        result = scored(oracle, item, step, edited, ws / f"repair{r}" / item["id"] / "repo")
        if error:
            result = {"verdict": "FAIL", "error": error}
        row["verdicts"].append({"verdict": result["verdict"], "counts": counts(result)})
        print(f"  {item['id']} repair {r}: {result['verdict']} {counts(result)}", flush=True)
        if result["verdict"] == "PASS" or edited is None:
            break
        why = ORACLE_FAILED.format(failures=failures_of(result))
    row["seconds"] = round(time.monotonic() - t0, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="what shared/repotasks/prepare.py wrote")
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--arms", default="samples,oracle-repair")
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated task ids")
    parser.add_argument("--model", default="local")
    parser.add_argument("--cache", help="replay cache file")
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    args = parser.parse_args()
    tasks = load_tasks(args.out, [t for t in args.only.split(",") if t])
    ws = args.workspace.resolve()
    ws.mkdir(parents=True, exist_ok=True)
    out = ws / "repo_generation_ceiling.json"
    table: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    oracle = load_oracle(args.oracle)
    arms = [a for a in args.arms.split(",") if a]
    replay = ReplayCache(args.cache) if args.cache else None
    with Resources(Context(workspace=str(ws / "agent"), model=args.model), cache=replay) as res:
        for arm in arms:
            rows = table.setdefault(arm, {"tasks": {}})
            rows.update(
                {"k": args.samples, "temperature": args.temperature}
                if arm == "samples"
                else {"rounds": args.rounds}
            )
            for item in tasks:
                if item["id"] in rows["tasks"]:
                    continue
                if arm == "samples":
                    row = samples_task(res, oracle, item, ws, args.samples, args.temperature)
                else:
                    row = repair_task(res, oracle, item, ws, args.rounds)
                rows["tasks"][item["id"]] = row
                out.write_text(json.dumps(table, indent=2) + "\n")
    report(table)


def report(table: dict[str, Any]) -> None:
    """Per arm: tasks some candidate solves, and each task's verdicts."""
    for arm, rows in table.items():
        solved = [
            t
            for t, r in rows["tasks"].items()
            if any(v["verdict"] == "PASS" for v in r["verdicts"])
        ]
        tokens = sum(r["tokens"] for r in rows["tasks"].values())
        extra = (
            f"k={rows.get('k')}, T={rows.get('temperature')}"
            if arm == "samples"
            else f"rounds={rows.get('rounds')}, "
            f"{sum(r.get('unchanged', 0) for r in rows['tasks'].values())} repairs unchanged"
        )
        print(
            f"{arm} ({extra}): some candidate passes in {len(solved)}/{len(rows['tasks'])} "
            f"{solved}; {tokens} out tokens"
        )
        for t, r in rows["tasks"].items():
            print(f"  {t}: " + " | ".join(f"{v['verdict']} {v['counts']}" for v in r["verdicts"]))


if __name__ == "__main__":
    main()
