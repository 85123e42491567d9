from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "loop_figures.py"
_SPEC = importlib.util.spec_from_file_location("loop_figures", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
figures = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("loop_figures", figures)
_SPEC.loader.exec_module(figures)


def _attempt(run: Path, step: str, n: int, **values: object) -> None:
    folder = run / "steps" / step / "attempts" / str(n) / "messages"
    folder.mkdir(parents=True)
    (folder / "history.json").write_text(json.dumps({"figures": values, "messages": []}))


def test_a_runs_figures_add_up_its_attempts(tmp_path: Path) -> None:
    run = tmp_path / "standard.t1"
    _attempt(run, "s1", 1, tool_calls=5, tool_errors=1, broken_calls=2, recovered_calls=1,
             largest_prompt=3000, context_window=8192, stopped="tool budget spent")  # fmt: skip
    _attempt(run, "s1", 2, tool_calls=2, largest_prompt=4100, stopped="tests passed")
    (run / "run.json").write_text(json.dumps({"status": "done", "usage": {"model_calls": 9}}))
    got = figures.run_figures(run)
    assert got == {"tool_calls": 7, "tool_errors": 1, "broken_calls": 2, "recovered_calls": 1,
                   "tool_limit_hits": 1, "largest_prompt": 4100, "context_window": 8192,
                   "status": "done", "model_calls": 9, "finished": True, "calls": {},
                   "recalled": 0}  # fmt: skip
    line = figures.arm_line("standard", [{**got, "id": "t1"}])
    assert "largest prompt 4100 of 8192" in line and "tool-limit hits 1" in line
    assert "unfinished 0" in line


def test_the_memories_a_run_recalled_are_counted(tmp_path: Path) -> None:
    run = tmp_path / "memory.t3"
    run.mkdir()
    recalled = [{"id": "m1", "type": "lesson"}, {"id": "m2", "type": "convention"}]
    info = {"status": "failed", "memories": {"recalled": recalled}}
    (run / "run.json").write_text(json.dumps(info))
    assert figures.run_figures(run)["recalled"] == 2
    (run / "run.json").write_text(json.dumps({"status": "failed", "memories": {"written": []}}))
    assert figures.run_figures(run)["recalled"] == 0


def test_a_run_that_never_ended_is_unfinished(tmp_path: Path) -> None:
    run = tmp_path / "standard.t2"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"status": "interrupted"}))
    got = figures.run_figures(run)
    assert got["finished"] is False
    assert "unfinished ['t2']" in figures.arm_line("standard", [{**got, "id": "t2"}])


def test_purpose_line_sums_each_purpose_per_task() -> None:
    rows = [
        {"calls": {"plain": {"calls": 1, "input_tokens": 90, "output_tokens": 10, "seconds": 4.0}}},
        {
            "calls": {
                "plain": {"calls": 1, "input_tokens": 90, "output_tokens": 10, "seconds": 6.0},
                "tool_loop": {"calls": 4, "input_tokens": 800, "output_tokens": 200, "seconds": 30},
            }
        },
    ]
    assert figures.purpose_line("standard", rows) == (
        "standard per task by purpose: tool_loop 2.0 calls, 500 tok, 15.0 s; "
        "plain 1.0 calls, 100 tok, 5.0 s"
    )
    assert figures.purpose_line("plain", [{}]) == "plain per task by purpose: no figures"
