"""benchmarks/calls_that_counted.py: per kind of candidate, how many were drawn and kept."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "calls_that_counted",
    Path(__file__).resolve().parents[3] / "benchmarks" / "calls_that_counted.py",
)
assert _SPEC is not None and _SPEC.loader is not None
counted = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(counted)


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_candidates_are_counted_by_origin_and_samples_by_whether_they_won(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "tasks.a"
    _write(
        run / "steps" / "s1" / "attempts" / "1" / "drafts.json",
        {
            "candidates": [
                {"k": 0, "origin": "plain", "passed": False, "contract": "0 passed, 1 failed"},
                {"k": 1, "origin": "witness", "passed": False, "contract": "0 passed, 1 failed"},
                {"k": 2, "origin": "witness", "passed": False, "contract": None},
                {"k": 3, "origin": "repair", "passed": True, "contract": "1 passed, 0 failed"},
            ],
            "kept": 3,
            "suspect": {},
        },
    )
    _write(run / "plain" / "samples" / "choice.json", {"samples": 2, "chosen": 1})
    _write(tmp_path / "runs" / "other.b" / "plain" / "samples" / "choice.json",
           {"samples": 2, "chosen": 0})  # fmt: skip
    _write(tmp_path / "runs" / "tasks.d" / "plain" / "samples" / "choice.json",
           {"samples": 2, "chosen": -1})  # fmt: skip
    # A record from before origins were written: informed candidates were retries.
    _write(
        tmp_path / "runs" / "tasks.c" / "steps" / "s1" / "attempts" / "1" / "drafts.json",
        {"candidates": [{"k": 0, "informed": True, "passed": False, "contract": "x"}],
         "kept": 0, "suspect": {"0": "every witness"}},
    )  # fmt: skip
    got = counted.tally(tmp_path, "tasks.")
    assert got["candidates"] == {
        "plain": {"drawn": 1, "code": 1, "passed": 0, "kept": 0},
        "repair": {"drawn": 1, "code": 1, "passed": 1, "kept": 1},
        "retry": {"drawn": 1, "code": 1, "passed": 0, "kept": 1},
        "witness": {"drawn": 2, "code": 1, "passed": 0, "kept": 0},
    }
    assert got["attempts"] == 2 and got["attempts_with_suspect_checks"] == 1
    assert got["whole_task_samples"] == {
        "runs": 2,
        "drawn": 4,
        "replaced_plain": 2,
        "recombined": 1,  # the plain answer and its samples recombined, no call
    }
