r"""Record real model exchanges of whole runs, for the unit suite to replay in seconds.

Each task runs once on a real model (the embedded one in-process, or any OpenAI-compatible
server with ``--base-url``) with an :class:`~atom_agent.testing.ExchangeRecorder` on it; the
replies, in order, go to ``OUT/<name>.json`` with the task, the settings and what the run
committed. ``tests/unit/graph/test_recorded_exchanges.py`` replays every file there and
checks the run ends the same way. Re-record after a change that alters which calls a run
makes (the replay then says which call is out of step):

    python scripts/record_exchanges.py tests/data/recordings --model local
    python scripts/record_exchanges.py tests/data/recordings --model openai:qwen2.5-coder \\
        --base-url http://127.0.0.1:8080/v1 --suffix server

Tasks default to a small built-in set (one that the plain answer solves, ones that make the
tool loop work); ``--tasks FILE.jsonl`` (id, task) records others.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from atom_agent import Context, run_task  # noqa: E402
from atom_agent.resources import Resources  # noqa: E402
from atom_agent.testing import ExchangeRecorder  # noqa: E402
from atom_agent.workspace import Workspace  # noqa: E402

TASKS: list[dict[str, Any]] = [
    {
        "id": "clamp",
        "task": "Write a Python function clamp(x, low, high) that returns x limited to the "
        "range [low, high]; it raises ValueError when low > high. "
        "For example clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0.",
    },
    {
        "id": "roman",
        "task": "Write to_roman(n) that turns an integer from 1 to 3999 into a Roman numeral "
        "(to_roman(1994) == 'MCMXCIV') and from_roman(s) that turns it back; both raise "
        "ValueError for anything out of range or malformed.",
    },
    {
        # No plain answer to start from: the tool loop writes the code itself.
        "id": "clamp-loop",
        "task": "Write a Python function clamp(x, low, high) that returns x limited to the "
        "range [low, high]. For example clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0.",
        "settings": {"candidate_zero": False},
    },
]
SETTINGS: dict[str, Any] = {
    "model_profile": "standard",
    "max_attempts": 2,
    "max_replans": 0,
    "max_tool_calls": 10,
    "ask_user": False,
    # No time limit on the tool loop: a replay's calls take no time, so a live loop that
    # ended on its time would replay past its recorded end.
    "loop_time_factor": 0.0,
}
"""The settings every recording is made (and replayed) with."""


def record(task: dict[str, Any], out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Run one task on the real model with a recorder attached; write its recording."""
    settings = {**SETTINGS, **task.get("settings", {})}
    with tempfile.TemporaryDirectory(prefix="atom-record-") as tmp:
        ctx = Context(workspace=tmp, model=args.model, base_url=args.base_url, **settings)
        recorder = ExchangeRecorder()
        with Resources(ctx) as res:
            model = res.model("executor")
            model.callbacks = [recorder]
            try:
                outcome = run_task(task["task"], resources=res, run_id=f"record.{task['id']}")
            finally:
                model.callbacks = None
        ws = Workspace(tmp)
        run = ws.run(outcome.run_id)
        committed = {
            step: (ws.step(run, step).artifacts / "impl.py").read_text(encoding="utf-8")
            for step, status in outcome.step_status.items()
            if status == "committed" and (ws.step(run, step).artifacts / "impl.py").is_file()
        }
        name = task["id"] + (f".{args.suffix}" if args.suffix else "")
        about = {
            "task": task["task"],
            "settings": settings,
            "model": args.model,
            "served": bool(args.base_url),
            "outcome": {
                "status": outcome.status,
                "step_status": outcome.step_status,
                "committed": committed,
                "usage": outcome.usage,
            },
        }
        path = recorder.save(out / f"{name}.json", **about)
    print(f"{name}: {outcome.status}, {len(recorder.calls)} calls -> {path}", flush=True)
    return about


def main() -> None:
    """Record the tasks (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the recordings")
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default="", help="OpenAI-compatible server")
    parser.add_argument("--suffix", default="", help="added to each file name (e.g. server)")
    parser.add_argument("--tasks", type=Path, help="JSONL of {id, task} (default: built-in)")
    parser.add_argument("--only", default="", help="comma-separated task ids")
    args = parser.parse_args()
    tasks = (
        [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
        if args.tasks
        else TASKS
    )
    if args.only:
        tasks = [t for t in tasks if t["id"] in set(args.only.split(","))]
    for task in tasks:
        record(task, args.out, args)


if __name__ == "__main__":
    main()
