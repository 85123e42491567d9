"""`atom-agent runs list|show|export|calls`: the runs of a workspace, their results and costs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atom_agent.context import Context
from atom_agent.errors import WorkspaceError
from atom_agent.workspace import Workspace
from atom_agent.workspace.deliverable import export_result, result_dir


def _workspace(args: argparse.Namespace) -> Workspace:
    ctx = Context.from_env(**({"workspace": args.workspace} if args.workspace else {}))
    return Workspace(Path(ctx.workspace).expanduser())


def _list(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    rows = []
    for run in ws.list_runs():
        try:
            info = ws.read_run(run)
        except WorkspaceError as exc:
            # One unreadable run.json must not hide every other run: list it, flagged.
            rows.append(_unreadable(run.run_id, exc))
            continue
        rows.append(
            {
                "run_id": run.run_id,
                "status": str(info.get("status", "?")),
                "created_at": str(info.get("created_at", "")),
                "task": str(info.get("task", "")),
                "steps": info.get("steps") if isinstance(info.get("steps"), dict) else {},
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title=f"Runs in {ws.root}")
    for column in ("run", "status", "created", "steps", "task"):
        table.add_column(column)
    for r in rows:
        steps = r["steps"]
        done = sum(1 for s in steps.values() if s == "committed")
        table.add_row(
            r["run_id"], r["status"], r["created_at"][:19], f"{done}/{len(steps)}",
            escape(r["task"][:60]),
        )  # fmt: skip
    Console().print(table)
    for r in rows:
        if r.get("problem"):
            Console(stderr=True).print(f"[yellow]unreadable:[/yellow] {escape(r['problem'])}")
    return 0


def _unreadable(run_id: str, exc: Exception) -> dict[str, Any]:
    return {
        "run_id": run_id, "status": "unreadable", "created_at": "", "task": "", "steps": {},
        "problem": str(exc),
    }  # fmt: skip


def _show(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    run = ws.run(args.run_id)
    if args.json:
        payload: dict[str, Any] = {"run": ws.read_run(run)}
        if run.plan_json.exists():
            payload["plan"] = ws.read_plan(run)
        payload["steps"] = {s.step_id: ws.read_step(s) for s in ws.list_steps(run)}
        print(json.dumps(payload, indent=2, default=str))
        return 0
    if run.report_md.exists():
        print(run.report_md.read_text())
    else:
        print(json.dumps(ws.read_run(run), indent=2, default=str))
    return 0


def _export(args: argparse.Namespace) -> int:
    ws = _workspace(args)
    run = ws.run(args.run_id)
    written = export_result(result_dir(run), Path(args.dir).expanduser(), force=args.force)
    print(f"wrote {len(written)} files of run {run.run_id}'s result to {args.dir}")
    return 0


ORIGIN_OF = {
    "plain": "plain",
    "draft": "draft",
    "witness": "witness",
    "task_sample": "task_sample",
    "tool_loop": "tool loop",
}
"""The candidate origin (drafts.json) each purpose of a call writes, where it writes one."""


def calls_summary(ws: Workspace, prefix: str = "") -> dict[str, Any]:
    """Over the runs whose id starts with `prefix`: what each purpose of a call cost and won.

    Per purpose (run.json ``calls``): calls, tokens, seconds, and the calls that ran to their
    ``max_tokens`` (``capped``, a total over the runs, not per run). Per candidate origin (each
    attempt's drafts.json): candidates drawn, with code, that met the step's checks, that were
    kept, and that *decided* (kept, with no earlier candidate of the attempt passing as many
    checks: without it the attempt would have handed back something worse).
    """
    purposes: dict[str, dict[str, float]] = {}
    sources: dict[str, dict[str, int]] = {}
    runs = 0
    for run in ws.list_runs():
        if not run.run_id.startswith(prefix):
            continue
        try:
            info = ws.read_run(run)
        except WorkspaceError:
            continue
        runs += 1
        for purpose, row in (info.get("calls") or {}).items():
            mine = purposes.setdefault(purpose, {})
            for key, value in row.items():
                mine[key] = round(mine.get(key, 0) + value, 3)
        zero = "task_sample" if _sample_chosen(run.path / "plain" / "samples") else "plain"
        for record in sorted(run.path.glob("steps/*/attempts/*/drafts.json")):
            _tally_sources(record, sources, zero)
    return {"runs": runs, "purposes": purposes, "sources": sources}


def _sample_chosen(samples: Path) -> bool:
    """A whole-task sample replaced the plain answer as candidate zero (its ``choice.json``)."""
    try:
        return bool(json.loads((samples / "choice.json").read_text(encoding="utf-8"))["chosen"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _tally_sources(record: Path, sources: dict[str, dict[str, int]], zero: str) -> None:
    """Count `record`'s candidates by origin; candidate zero's (``plain``) counts as `zero`."""
    try:
        drafts = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    candidates = [c for c in drafts.get("candidates", []) if isinstance(c, dict)]
    best_before = -1
    for c in sorted(candidates, key=lambda c: int(c.get("k", 0))):
        origin = str(c.get("origin") or "draft")
        origin = zero if origin == "plain" else origin
        row = sources.setdefault(origin, {"drawn": 0, "code": 0, "met": 0, "kept": 0, "decided": 0})
        passed = _passed(c.get("contract"))
        row["drawn"] += 1
        row["code"] += c.get("contract") is not None
        row["met"] += bool(c.get("passed"))
        if c.get("k") == drafts.get("kept"):
            row["kept"] += 1
            row["decided"] += passed > best_before
        best_before = max(best_before, passed)


def _passed(summary: object) -> int:
    """Checks passed, from a candidate's ``"3 passed, 1 failed"`` (-1: it did not run)."""
    head = str(summary or "").split(" passed", 1)[0]
    return int(head) if head.isdigit() else -1


def _calls(args: argparse.Namespace) -> int:
    summary = calls_summary(_workspace(args), args.prefix)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    n = summary["runs"] or 1
    console = Console()
    table = Table(
        title=f"Model calls by purpose over {summary['runs']} runs (per run; capped: the calls "
        "that ran to their max_tokens, in all)"
    )
    columns = ("purpose", "calls", "tokens", "seconds", "capped", "candidates", "met", "kept",
               "decided")  # fmt: skip
    for column in columns:
        table.add_column(column)
    sources = dict(summary["sources"])
    for purpose, row in sorted(
        summary["purposes"].items(), key=lambda kv: -kv[1].get("seconds", 0)
    ):
        won = sources.pop(ORIGIN_OF.get(purpose, ""), None) or {}
        tokens = row.get("input_tokens", 0) + row.get("output_tokens", 0)
        table.add_row(
            purpose, f"{row.get('calls', 0) / n:.1f}", f"{tokens / n:.0f}",
            f"{row.get('seconds', 0) / n:.1f}", str(int(row.get("capped", 0))),
            *(str(won.get(k, "–")) for k in ("drawn", "met", "kept", "decided")),
        )  # fmt: skip
    for origin, won in sources.items():  # candidates no call wrote (an earlier attempt's best)
        counts = (str(won.get(k, 0)) for k in ("drawn", "met", "kept", "decided"))
        table.add_row(origin, "–", "–", "–", "–", *counts)
    console.print(table)
    return 0


def register(subparsers: Any) -> None:
    """Add the `runs` subcommand."""
    parser = subparsers.add_parser("runs", help="list and show runs of a workspace")
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="every run, oldest first")
    listing.add_argument("--workspace")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_list)
    show = sub.add_parser("show", help="a run's report (or its files with --json)")
    show.add_argument("run_id")
    show.add_argument("--workspace")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_show)
    export = sub.add_parser(
        "export",
        help="copy a run's result (its package and tests) into DIR",
        description="Copy runs/RUN_ID/result/ (the committed code as one package, with its "
        "tests) into DIR. Existing files are never overwritten unless --force is given.",
    )
    export.add_argument("run_id")
    export.add_argument("dir", help="where to write the package and its tests")
    export.add_argument("--force", action="store_true", help="overwrite existing files")
    export.add_argument("--workspace")
    export.set_defaults(func=_export)
    calls = sub.add_parser(
        "calls",
        help="what each kind of model call cost and won, over a set of runs",
        description="Per purpose of a model call (plan, contract, plain answer, draft, "
        "witness, tool loop, ...): calls, tokens and seconds per run, and the calls that ran "
        "to their max_tokens; and per "
        "kind of candidate: how many were drawn, met the step's checks, were kept, and "
        "decided the outcome (kept, with no earlier candidate as good).",
    )
    calls.add_argument("--prefix", default="", help="only runs whose id starts with this")
    calls.add_argument("--workspace")
    calls.add_argument("--json", action="store_true")
    calls.set_defaults(func=_calls)
