"""benchmarks/heldout/streams/oracle.py: references pass, each broken rule fails its part.

Run as the evaluation runs it (`score WORKSPACE STREAM --json OUT`, a process per run), on
workspaces laid out as a batch leaves them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

STREAMS = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout" / "streams"
STREAM = STREAMS / "h-text.jsonl"
IDS = [json.loads(line)["id"] for line in STREAM.read_text().splitlines() if line.strip()]


def _reference(task_id: str) -> str:
    return (STREAMS / "reference" / f"{task_id}.py").read_text(encoding="utf-8")


def _commit(ws: Path, task_id: str, source: str) -> None:
    folder = ws / "runs" / f"h-text.{task_id}" / "steps" / "step1" / "committed" / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "impl.py").write_text(source, encoding="utf-8")


def _score(ws: Path) -> dict[str, dict[str, object]]:
    out = ws / "scored.json"
    done = subprocess.run(
        [sys.executable, str(STREAMS / "oracle.py"), "score", str(ws), str(STREAM), "--json",
         str(out)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {row["id"]: row for row in json.loads(out.read_text())}


def test_the_references_pass_every_task_and_rule(tmp_path: Path) -> None:
    for task_id in IDS:
        _commit(tmp_path, task_id, _reference(task_id))
    rows = _score(tmp_path)
    assert [rows[t]["task"] for t in IDS] == [True] * 5
    parts = [part for t in IDS for part in rows[t]["parts"]]  # type: ignore[attr-defined]
    assert len(parts) == 7 and all(ok for _, ok in parts)
    assert rows["t1"]["rules"] is None  # the first task states the rules: none earlier


def test_code_that_ignores_the_rules_keeps_the_task_and_fails_each_rule(tmp_path: Path) -> None:
    # Right behaviour, no annotations, no type checks: what a model that forgot writes.
    bare = {
        "t2": "def initials(name):\n    return ''.join(w[0].upper() for w in name.split())\n",
        "t3": "def truncate(text, width):\n    if width < 3:\n        raise ValueError(width)\n"
        "    return text if len(text) <= width else text[: width - 3] + '...'\n",
        "t5": "def count_vowels(text):\n    out = {}\n    for c in text.lower():\n"
        "        if c in 'aeiou':\n            out[c] = out.get(c, 0) + 1\n    return out\n",
    }
    for task_id, source in bare.items():
        _commit(tmp_path, task_id, source)
    rows = _score(tmp_path)
    for task_id in bare:
        assert rows[task_id]["task"] is True, rows[task_id]
        assert rows[task_id]["parts"] == [[n, False] for n, _ in rows[task_id]["parts"]]  # type: ignore[union-attr]
    # The changed rule: a plain TypeError no longer keeps it.
    _commit(tmp_path, "t5", _reference("t5").replace("raise TextTypeError", "raise TypeError"))
    assert _score(tmp_path)["t5"]["parts"] == [
        ["annotated", True],
        ["wrong type: TextTypeError", False],
    ]


def test_a_missing_run_scores_nothing_and_told_spells_the_rules_out(tmp_path: Path) -> None:
    rows = _score(tmp_path)
    assert all(rows[t]["task"] is False for t in IDS)
    assert rows["t3"]["parts"] == [["annotated", False], ["wrong type: TypeError", False]]
    told = subprocess.run(
        [sys.executable, str(STREAMS / "oracle.py"), "told", str(STREAM)],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    tasks = {t["id"]: t["task"] for t in map(json.loads, told.splitlines())}
    assert "TextTypeError" in tasks["t5"] and "TypeError" in tasks["t2"]
    assert tasks["t1"] == json.loads(STREAM.read_text().splitlines()[0])["task"]
