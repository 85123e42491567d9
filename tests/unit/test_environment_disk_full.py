"""A full disk at 10 different moments of a run: each run finishes, or resume finishes it.

A 2 MiB tmpfs holds the workspace; a filler file leaves only `free` KiB for the run, so the
disk fills at a different point each time (run folder, checkpoints, memory, staging, commit,
report). Freeing space is deleting the filler. Needs root for `mount` (skipped otherwise).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.cli.process import cli

FACTORY = {"ATOM_MODELS_FACTORY": "tests.unit.graph.factory:two_slow_steps"}
FREE_KIB = (8, 40, 72, 104, 136, 168, 200, 280, 520, 900)
"""Free space left for the run; a whole run takes ≈ 340 KiB here (most is the memory store)."""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {made.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave_kib: int) -> Path:
    """Fill `disk` up to `leave_kib` KiB free; returns the filler (delete it to free space)."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, free - leave_kib * 1024))
    return filler


@pytest.mark.integration
def test_a_full_disk_at_ten_points_never_loses_a_run(small_disk: Path) -> None:
    finished_directly, finished_on_resume, messages = [], [], []
    for free in FREE_KIB:
        ws = small_disk / f"ws{free}"
        run_id = f"full{free}"
        filler = _fill(small_disk, free)
        done = cli(ws, "run", "two things", "--run-id", run_id, "--json", **FACTORY)
        assert "Traceback" not in done.stderr, (free, done.stderr[-3000:])
        if done.returncode == 0:
            finished_directly.append(free)
            filler.unlink()
            shutil.rmtree(ws)  # the next level starts from an empty disk
            continue
        # Not finished: a clear message naming the cause and the way on, nothing torn.
        assert done.returncode == 2, (free, done.returncode, done.stdout, done.stderr[-3000:])
        assert "disk is full" in done.stderr, (free, done.stderr[-3000:])
        messages.append(done.stderr.strip())
        filler.unlink()  # space is freed
        if f"atom-agent resume {run_id}" in done.stderr:  # what the message says to do
            again = cli(ws, "resume", run_id, "--json", **FACTORY)
        else:  # the disk filled before the run started: nothing to resume, run it again
            assert not (ws / "runs" / run_id).exists()
            again = cli(ws, "run", "two things", "--run-id", run_id, "--json", **FACTORY)
        assert again.returncode == 0, (free, again.stdout[-2000:], again.stderr[-3000:])
        assert json.loads(again.stdout)["status"] == "done"
        finished_on_resume.append(free)
        shutil.rmtree(ws)
    print(  # noqa: T201 - the figure the README quotes
        f"disk full: {len(finished_directly)} finished directly {finished_directly}, "
        f"{len(finished_on_resume)} after space was freed {finished_on_resume}"
    )
    assert len(finished_directly) + len(finished_on_resume) == len(FREE_KIB)
    assert finished_on_resume  # the levels really cut runs short
