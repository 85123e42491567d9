"""`atom-agent doctor`: which sandbox isolates generated code here, what it covers, a live run."""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from atom_agent.sandbox import Limits, default_runner, sandbox_status

# Network interfaces, not a connection: the check sends no packet anywhere.
_PROBE = (
    "import json, os, socket\n"
    "nics = sorted(name for _, name in socket.if_nameindex())\n"
    "print(json.dumps({'uid': os.getuid(), 'nics': nics, 'root': sorted(os.listdir('/'))}))\n"
)


def live_check() -> dict[str, Any]:
    """Run a tiny program in the default runner: what it sees from inside."""
    runner = default_runner()
    with tempfile.TemporaryDirectory(prefix="atom-doctor-") as tmp:
        staging = Path(tmp)
        (staging / "probe.py").write_text(_PROBE, encoding="utf-8")
        result = runner.run_python("probe.py", cwd=staging, limits=Limits(timeout_s=20.0))
    inside: dict[str, Any] = {}
    if result.ok:
        try:
            inside = json.loads(result.output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            inside = {}
    return {
        "ok": result.ok,
        "sandbox": result.sandbox,
        "seconds": round(result.duration_s, 3),
        "uid_inside": inside.get("uid"),
        "interfaces": inside.get("nics"),
        "root_listing": inside.get("root"),
        "tree_limit": result.tree_limit,
        "notes": result.notes,
        "output": "" if result.ok else result.output[-2000:],
    }


def _cmd(args: argparse.Namespace) -> int:
    status = sandbox_status()
    check = None if args.no_check else live_check()
    if args.json:
        print(json.dumps({"sandbox": dataclasses.asdict(status), "check": check}, indent=2))
        return 0 if check is None or check["ok"] else 1
    console = Console()
    console.print(f"Sandbox: [bold]{status.runner}[/bold] — {escape(status.reason)}")
    console.print(f"Tree limit: {escape(status.tree_limit)}")
    console.print("Covers:")
    for line in status.covers:
        console.print(f"  [green]✓[/green] {escape(line)}")
    console.print("Does not cover:")
    for line in status.gaps:
        console.print(f"  [yellow]✗[/yellow] {escape(line)}")
    if check is not None:
        if check["ok"]:
            console.print(
                f"Live run: ok in {check['seconds']}s as uid {check['uid_inside']}; network "
                f"interfaces: {escape(' '.join(check['interfaces'] or []))}; sees / = "
                f"{escape(' '.join(check['root_listing'] or []))}"
            )
        else:
            console.print("[red]Live run failed:[/red]", escape(check["output"]))
        for note in check["notes"]:
            console.print(f"  note: {escape(note)}")
    return 0 if check is None or check["ok"] else 1


def register(subparsers: Any) -> None:
    """Add the `doctor` subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="which sandbox isolates generated code here, and what it does not cover",
        description="Say which sandbox runner generated code gets on this machine (bubblewrap "
        "or the namespace fallback), why, what it isolates and what it does not, and run a "
        "tiny program in it.",
    )
    parser.add_argument("--no-check", action="store_true", help="skip the live sandbox run")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=_cmd)
