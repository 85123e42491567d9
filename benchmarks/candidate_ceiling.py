"""Selection or generation: would any candidate a run wrote have passed the hidden oracle?

After a devtasks evaluation, every module the agent wrote for a task (the plain answer, the
whole-task samples, each step's drafts, witnesses, repairs and recombinations) is scored by
`shared/devtasks/oracle.py`, each in its own interpreter with a time limit. Per task it prints
what was handed back and how many candidates of each origin pass. A task where some candidate
passes but the committed code does not is lost by *selection* (the checks did not tell the
candidates apart); a task where none passes is lost by *generation* (no check or selection
rule could have saved it):

    python benchmarks/candidate_ceiling.py DIR [--prefix tasks.] [--oracle PATH] [--why]

(--why also prints each candidate's verdict: the oracle's first failed check, and its path.)

(PATH defaults to ../shared/devtasks/oracle.py beside the repository.)

A step's candidate is scored together with the other steps' committed code (the run's own
package otherwise), as the oracle reads a run: later definitions win.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

TIMEOUT_S = 20

_WORKER = r"""
import importlib.util, json, sys
oracle_path, tid = sys.argv[1], sys.argv[2]
files, paths = json.loads(sys.argv[3]), json.loads(sys.argv[4])
spec = importlib.util.spec_from_file_location("devtasks_oracle", oracle_path)
oracle = importlib.util.module_from_spec(spec); spec.loader.exec_module(oracle)
sys.path[:0] = paths
ns = {}
for i, f in enumerate(files):
    oracle._load(__import__("pathlib").Path(f), f"_candidate{i}", ns)
try:
    oracle.CHECKS[tid](ns)
    print(json.dumps(["PASS", ""]))
except Exception as e:
    print(json.dumps(["fail", f"{type(e).__name__}: {str(e)[:80]}"]))
"""


def verdict(oracle: Path, tid: str, files: list[Path], paths: list[Path]) -> tuple[str, str]:
    """The oracle's verdict on the public names of `files` (later files win), in a subprocess."""
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _WORKER,
                str(oracle),
                tid,
                json.dumps([str(f) for f in files]),
                json.dumps([str(p) for p in paths]),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return "fail", f"no verdict in {TIMEOUT_S} s"
    lines = done.stdout.strip().splitlines()
    if not lines:
        return "fail", (done.stderr.strip().splitlines() or ["no output"])[-1][:80]
    status, why = json.loads(lines[-1])
    return str(status), str(why)


def candidates(run: Path) -> list[tuple[str, Path]]:
    """(origin, impl.py) for every module the run wrote for its task."""
    found: list[tuple[str, Path]] = []
    plain = run / "plain" / "impl.py"
    if plain.is_file():
        found.append(("plain", plain))
    for impl in sorted((run / "plain" / "samples").glob("*/impl.py")):
        found.append(("sample", impl))
    for drafts in sorted((run / "steps").glob("*/attempts/*/drafts.json")):
        attempt = drafts.parent
        try:
            listed = json.loads(drafts.read_text(encoding="utf-8")).get("candidates") or []
        except (OSError, ValueError):
            listed = []
        origin_of = {str(c.get("k")): str(c.get("origin") or "?") for c in listed}
        for impl in sorted((attempt / "candidates").glob("*/impl.py")):
            found.append((origin_of.get(impl.parent.name, "?"), impl))
        for impl in sorted((attempt / "candidates" / "recombined").glob("*/impl.py")):
            found.append(("recombined", impl))
    return found


def committed(run: Path) -> list[Path]:
    """The committed impl.py of each step, in plan order (as the oracle reads them)."""
    return sorted((run / "steps").glob("*/committed/artifacts/impl.py"))


def score_run(oracle: Path, tid: str, run: Path) -> dict[str, Any]:
    """The handed-back verdict and, per origin, candidates written and passing."""
    steps = committed(run)
    result = sorted(p for p in (run / "result").rglob("*.py") if not p.name.startswith("test"))
    modules = [*steps, *result]
    handed, why = verdict(oracle, tid, modules, [run / "steps", *{p.parent for p in modules}])
    written: Counter[str] = Counter()
    passing: Counter[str] = Counter()
    verdicts: list[tuple[str, str, str, str]] = []
    for origin, impl in candidates(run):
        step_dir = impl.parents[3] if "attempts" in impl.parts else None
        others = [s for s in steps if step_dir is None or step_dir not in s.parents]
        paths = [impl.parent, *(s.parent for s in others)]
        if step_dir is not None:
            paths.append(impl.parents[2] / "pythonpath")
        status, reason = verdict(oracle, tid, [*others, impl] if step_dir else [impl], paths)
        verdicts.append((origin, status, reason, str(impl.relative_to(run))))
        written[origin] += 1
        passing[origin] += status == "PASS"
    return {
        "task": tid,
        "handed_back": handed,
        "why": why,
        "written": dict(written),
        "passing": dict(passing),
        "any_passes": sum(passing.values()) > 0,
        "verdicts": verdicts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--prefix", default="tasks.")
    parser.add_argument("--why", action="store_true", help="each candidate's verdict and path")
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--oracle", type=Path, default=here / "shared" / "devtasks" / "oracle.py")
    args = parser.parse_args()
    if not args.oracle.is_file():
        parser.error(f"no oracle at {args.oracle} (give --oracle)")
    rows = []
    for run in sorted((args.workspace / "runs").glob(f"{args.prefix}*")):
        tid = run.name[len(args.prefix) :]
        row = score_run(args.oracle, tid, run)
        rows.append(row)
        mix = ", ".join(
            f"{o} {row['passing'].get(o, 0)}/{n}" for o, n in sorted(row["written"].items())
        )
        print(f"{tid:14} handed back {row['handed_back']:4}  passing: {mix or '-'}", flush=True)
        if args.why:
            for origin, status, reason, where in row["verdicts"]:
                print(f"    {origin:10} {status:4} {reason[:80]:80}  {where}")
    handed = sum(r["handed_back"] == "PASS" for r in rows)
    ceiling = sum(r["handed_back"] == "PASS" or r["any_passes"] for r in rows)
    lost = [r["task"] for r in rows if r["any_passes"] and r["handed_back"] != "PASS"]
    print(
        f"{len(rows)} tasks: handed back {handed} passing; some candidate passes in {ceiling}"
        f" (lost by selection: {', '.join(lost) or 'none'};"
        f" by generation: {len(rows) - ceiling})"
    )


if __name__ == "__main__":
    main()
