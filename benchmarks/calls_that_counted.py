"""Which model calls changed a decision: per kind of candidate, how many were drawn and kept.

Reads a workspace after a batch or an evaluation (``runs/*/``) and prints, per origin of a
step's candidates (``drafts.json``: the plain answer, drafts, witnesses, focused repairs,
whole-file retries, an earlier attempt's best) how many were written, how many had code, how
many met the step's checks and how many were kept (``recombined``: made from the others with
no call); per run, how many whole-task samples were drawn beside the plain answer and how often
one, or a recombination of them, replaced it (``plain/samples/choice.json``);
and how many attempts had a check made suspect by the witnesses. A kind of call that is drawn
often and never kept nor decides anything is a call the agent does not need:

    python benchmarks/calls_that_counted.py DIR [--prefix tasks.]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def tally(workspace: Path, prefix: str = "") -> dict[str, Any]:
    """The counts over every run of `workspace` whose id starts with `prefix`."""
    drawn: Counter[str] = Counter()
    with_code: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    attempts = suspect_attempts = 0
    samples = replaced = recombined = sampled_runs = 0
    for run in sorted((workspace / "runs").glob(f"{prefix}*")):
        choice = _load(run / "plain" / "samples" / "choice.json")
        if choice is not None:
            sampled_runs += 1
            samples += int(choice.get("samples", 0))
            replaced += bool(choice.get("chosen"))
            recombined += choice.get("chosen") == -1
        for record in sorted(run.glob("steps/*/attempts/*/drafts.json")):
            drafts = _load(record)
            if drafts is None:
                continue
            attempts += 1
            suspect_attempts += bool(drafts.get("suspect"))
            for c in drafts.get("candidates", []):
                origin = str(c.get("origin") or ("retry" if c.get("informed") else "draft"))
                drawn[origin] += 1
                with_code[origin] += c.get("contract") is not None
                passed[origin] += bool(c.get("passed"))
                kept[origin] += c.get("k") == drafts.get("kept")
    return {
        "candidates": {
            o: {"drawn": drawn[o], "code": with_code[o], "passed": passed[o], "kept": kept[o]}
            for o in sorted(drawn)
        },
        "attempts": attempts,
        "attempts_with_suspect_checks": suspect_attempts,
        "whole_task_samples": {
            "runs": sampled_runs,
            "drawn": samples,
            "replaced_plain": replaced,
            "recombined": recombined,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--prefix", default="", help="only runs whose id starts with this")
    args = parser.parse_args()
    counts = tally(args.workspace, args.prefix)
    for origin, row in counts["candidates"].items():
        print(
            f"{origin:8} drawn {row['drawn']:3}  with code {row['code']:3}  "
            f"met the checks {row['passed']:3}  kept {row['kept']:3}"
        )
    print(
        f"attempts: {counts['attempts']}, with checks the witnesses made suspect: "
        f"{counts['attempts_with_suspect_checks']}"
    )
    s = counts["whole_task_samples"]
    print(
        f"whole-task samples: {s['drawn']} in {s['runs']} runs, "
        f"replaced the plain answer in {s['replaced_plain']} "
        f"({s['recombined']} by recombining it with them, no model call)"
    )


if __name__ == "__main__":
    main()
