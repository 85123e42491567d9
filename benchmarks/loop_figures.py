"""Per-task figures of an agent arm read from its runs: model and tool calls, limits, prompts.

Shared by the evaluations that compare profiles (devtasks_eval, humaneval_profiles): each
attempt's ``history.json`` carries ``figures`` (written by the executor), and ``run.json``
the run's status and usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FINISHED = frozenset({"done", "failed", "rejected", "budget_exhausted"})
"""Run statuses that are an ending; anything else (error, interrupted, running) is not."""


def run_figures(run_dir: Path) -> dict[str, Any]:
    """Figures of one run: calls, broken and recovered calls, tool-limit hits, largest prompt."""
    totals = {"tool_calls": 0, "tool_errors": 0, "broken_calls": 0, "recovered_calls": 0,
              "tool_limit_hits": 0, "largest_prompt": 0, "context_window": None}  # fmt: skip
    for history in sorted(run_dir.glob("steps/*/attempts/*/messages/history.json")):
        figures = json.loads(history.read_text(encoding="utf-8")).get("figures") or {}
        for key in ("tool_calls", "tool_errors", "broken_calls", "recovered_calls"):
            totals[key] += int(figures.get(key, 0))
        totals["tool_limit_hits"] += figures.get("stopped") in (
            "tool budget spent",
            "recursion limit",
        )
        totals["largest_prompt"] = max(
            totals["largest_prompt"], int(figures.get("largest_prompt", 0))
        )
        totals["context_window"] = figures.get("context_window") or totals["context_window"]
    info_path = run_dir / "run.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    usage = info.get("usage") or {}
    return {
        **totals,
        "status": info.get("status", "missing"),
        "model_calls": int(usage.get("model_calls", 0)),
        "finished": info.get("status") in FINISHED,
        "calls": info.get("calls") or {},
        "recalled": len((info.get("memories") or {}).get("recalled") or []),
    }


def purpose_line(name: str, rows: list[dict[str, Any]]) -> str:
    """Where an arm's model calls went: calls, tokens and seconds per task, by purpose."""
    per = len(rows) or 1
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        for purpose, figures in (row.get("calls") or {}).items():
            mine = totals.setdefault(purpose, {})
            for key, value in figures.items():
                mine[key] = mine.get(key, 0) + value
    parts = [
        f"{purpose} {t.get('calls', 0) / per:.1f} calls, "
        f"{(t.get('input_tokens', 0) + t.get('output_tokens', 0)) / per:.0f} tok, "
        f"{t.get('seconds', 0) / per:.1f} s"
        for purpose, t in sorted(totals.items(), key=lambda kv: -kv[1].get("seconds", 0))
    ]
    return f"{name} per task by purpose: " + ("; ".join(parts) or "no figures")


def arm_line(name: str, rows: list[dict[str, Any]]) -> str:
    """One line of totals over an arm's tasks."""
    unfinished = [r.get("id") for r in rows if not r.get("finished", True)]
    window = next((r["context_window"] for r in rows if r.get("context_window")), None)
    largest = max((r.get("largest_prompt", 0) for r in rows), default=0)
    per = len(rows) or 1
    return (
        f"{name}: model calls/task {sum(r.get('model_calls', 0) for r in rows) / per:.1f}, "
        f"tool calls/task {sum(r.get('tool_calls', 0) for r in rows) / per:.1f}, "
        f"broken calls {sum(r.get('broken_calls', 0) for r in rows)}, "
        f"recovered calls {sum(r.get('recovered_calls', 0) for r in rows)}, "
        f"tool errors {sum(r.get('tool_errors', 0) for r in rows)}, "
        f"tool-limit hits {sum(r.get('tool_limit_hits', 0) for r in rows)}, "
        f"largest prompt {largest}"
        + (f" of {window}" if window else "")
        + f", unfinished {unfinished or 0}"
    )
