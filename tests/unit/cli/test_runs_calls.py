"""`atom-agent runs calls`: what each kind of call cost (run.json) and won (drafts.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from atom_agent.cli.runs import calls_summary
from atom_agent.workspace import Workspace


def _run(ws: Workspace, run_id: str, calls: dict[str, dict[str, float]], candidates: list[dict],
         kept: int) -> None:  # fmt: skip
    run = ws.create_run(run_id, task="t", status="done")
    ws.update_run(run, calls=calls)
    attempt = ws.new_attempt(ws.create_step(run, "s1"))
    (attempt.path / "drafts.json").write_text(json.dumps({"candidates": candidates, "kept": kept}))


def test_costs_add_up_and_only_a_kept_candidate_better_than_the_earlier_ones_decides(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path / "ws")
    plain = {"k": 0, "origin": "plain", "contract": "2 passed, 1 failed", "passed": False}
    witness = {"k": 1, "origin": "witness", "contract": "2 passed, 1 failed", "passed": False}
    repair = {"k": 2, "origin": "repair", "contract": "3 passed, 0 failed", "passed": True}
    row = {"calls": 1, "input_tokens": 100, "output_tokens": 20, "seconds": 5.0}
    _run(ws, "tasks.a", {"plain": row, "witness": row}, [plain, witness], kept=1)
    _run(ws, "tasks.b", {"plain": row, "repair": row}, [plain, repair], kept=2)
    _run(ws, "other.c", {"plain": row}, [plain], kept=0)

    got = calls_summary(ws, "tasks.")
    assert got["runs"] == 2
    assert got["purposes"]["plain"] == {"calls": 2, "input_tokens": 200, "output_tokens": 40,
                                        "seconds": 10.0}  # fmt: skip
    # The witness was kept but passed no more than the plain answer before it: it decided nothing.
    assert got["sources"]["witness"] == {"drawn": 1, "code": 1, "met": 0, "kept": 1, "decided": 0}
    assert got["sources"]["repair"] == {"drawn": 1, "code": 1, "met": 1, "kept": 1, "decided": 1}
    assert got["sources"]["plain"]["decided"] == 0 and got["sources"]["plain"]["drawn"] == 2

    shown = subprocess.run(
        [sys.executable, "-m", "atom_agent.cli", "runs", "calls", "--prefix", "tasks.",
         "--workspace", str(ws.root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "over 2 runs" in shown.stdout and "witness" in shown.stdout


def test_candidate_zero_counts_for_the_whole_task_sample_that_replaced_the_plain_answer(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path / "ws")
    zero = {"k": 0, "origin": "plain", "contract": "2 passed, 0 failed", "passed": True}
    _run(ws, "tasks.a", {}, [zero], kept=0)
    _run(ws, "tasks.b", {}, [zero], kept=0)
    samples = ws.run("tasks.b").path / "plain" / "samples"
    samples.mkdir(parents=True)
    (samples / "choice.json").write_text(json.dumps({"samples": 2, "chosen": 1}))

    got = calls_summary(ws, "tasks.")["sources"]
    assert got["plain"] == {"drawn": 1, "code": 1, "met": 1, "kept": 1, "decided": 1}
    assert got["task_sample"] == {"drawn": 1, "code": 1, "met": 1, "kept": 1, "decided": 1}
