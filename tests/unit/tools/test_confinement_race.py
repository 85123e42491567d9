"""Confinement under a concurrent symlink flipper: no read or write ever reaches outside.

A separate process plays generated code running in the staging area: it keeps swapping the
directory ``d`` for a symlink to a directory outside staging and back, while read_file and
write_file calls name files under ``d/``. A check-then-open implementation loses that race
(issue 13: 323 of 1,704 writes landed outside); opening through directory fds cannot.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

from tests.unit.tools.running import run_tool

from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolContext
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.scope import ToolScope

logger = logging.getLogger(__name__)

ROUNDS = 600  # each round: one read_file and one write_file (1,200 calls)

FLIPPER = r"""
import os, sys, time
staging, outside, stop = sys.argv[1:4]
d, real = os.path.join(staging, "d"), os.path.join(staging, "d_real")
flips = 0
made = 0
while not os.path.exists(stop):
    os.rename(d, real)  # the directory moves aside (it stays inside staging)...
    try:
        os.symlink(outside, d)  # ...and d now points outside, for a moment
        time.sleep(0.0002)
        os.unlink(d)
    except FileExistsError:
        pass  # a write_file made a new d/ in the gap: fine, it is inside staging
    flips += 1
    while True:  # put the directory back; a d/ a write made meanwhile is moved aside
        try:
            os.rename(real, d)
            break
        except OSError:
            made += 1
            os.rename(d, f"{d}_made{made}")
print(flips)
"""


def test_a_flipping_symlink_never_redirects_a_read_or_a_write(
    area: dict[str, Path], session: SessionContext, tmp_path: Path
) -> None:
    staging, outside = area["staging"], area["outside"]
    (staging / "d").mkdir()
    (staging / "d" / "f.txt").write_text("inside\n")
    (outside / "f.txt").write_text("OUTSIDE SECRET\n")
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    context = ToolContext(session=session, scope=ToolScope(staging=staging))
    stop = tmp_path / "stop"
    flipper = subprocess.Popen(
        [sys.executable, "-c", FLIPPER, str(staging), str(outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    calls = refused = raised = leaked_reads = 0
    written: list[str] = []
    try:
        for i in range(ROUNDS):
            read_call = {"name": "read_file", "args": {"path": "d/f.txt"}, "id": f"r{i}"}
            write_call = {
                "name": "write_file",
                "args": {"path": f"d/w{i}.txt", "content": f"write {i}\n"},
                "id": f"w{i}",
            }
            for call in (read_call, write_call):
                calls += 1
                try:
                    result = run_tool(FILE_TOOLS, call, context)
                except Exception:  # noqa: BLE001 - counted: none may escape
                    raised += 1
                    continue
                if result.status == "error":
                    refused += 1
                elif call is write_call:
                    written.append(f"w{i}.txt")
                elif "OUTSIDE" in json.loads(result.content)["content"]:
                    leaked_reads += 1
    finally:
        stop.touch()
        out, _ = flipper.communicate(timeout=60)
    flips = int(out.strip() or 0)
    landed_outside = sorted(p.name for p in outside.iterdir() if p.name not in before)
    figures = (
        f"calls={calls} flips={flips} refused={refused} raised={raised} "
        f"leaked_reads={leaked_reads} writes_outside={len(landed_outside)}"
    )
    logger.info("symlink flipper: %s", figures)  # -o log_cli=true --log-cli-level=INFO
    assert flipper.returncode == 0, figures
    assert flips > 0 and refused > 0, figures  # the race really ran: calls met the symlink
    assert raised == 0, figures
    assert leaked_reads == 0, figures
    assert landed_outside == [], figures
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
    # Every write that succeeded is in staging (under d/, or where the flipper moved it).
    inside = {p.name for p in staging.rglob("w*.txt")}
    assert written and set(written) <= inside
