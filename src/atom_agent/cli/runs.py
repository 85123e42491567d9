"""`atom-agent runs list|show|export`: the runs of a workspace, and their results."""

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
