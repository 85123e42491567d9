"""Opens one fresh memory store from N forked processes at once, T times; prints JSON counts.

Run as a script (a fresh interpreter: forking a pytest process that has threads is unsafe):
``python open_race.py TRIALS PROCESSES BASE_DIR``. Imports happen once, before forking, so a
trial costs the opening only.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
from pathlib import Path
from typing import Any

from atom_agent.memory.store import ChromaBackend


def _open(workspace: str, barrier: Any, results: Any) -> None:
    try:
        barrier.wait()
        backend = ChromaBackend.open(workspace)
        backend.collection("memory", "race")
        results.put("ok")
    except BaseException as exc:  # noqa: BLE001 - a crash of any kind is what we count
        results.put(f"{type(exc).__name__}: {str(exc)[:200]}")


def main() -> None:
    trials, processes, base = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    fork = mp.get_context("fork")
    crashed_trials, errors = 0, []
    for trial in range(trials):
        workspace = base / f"trial{trial}"
        barrier, results = fork.Barrier(processes), fork.Queue()
        procs = [fork.Process(target=_open, args=(str(workspace), barrier, results))
                 for _ in range(processes)]  # fmt: skip
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(60)
        bad = [o for o in outcomes if o != "ok"]
        crashed_trials += bool(bad)
        errors += bad
    print(json.dumps({"trials": trials, "crashed_trials": crashed_trials, "errors": errors}))  # noqa: T201


if __name__ == "__main__":
    main()
