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
GEOM = STREAMS / "h-geom.jsonl"


def _reference(task_id: str) -> str:
    return (STREAMS / "reference" / f"{task_id}.py").read_text(encoding="utf-8")


def _commit(ws: Path, task_id: str, source: str, stream: str = "h-text") -> None:
    folder = ws / "runs" / f"{stream}.{task_id}" / "steps" / "step1" / "committed" / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "impl.py").write_text(source, encoding="utf-8")


def _score(ws: Path, stream: Path = STREAM) -> dict[str, dict[str, object]]:
    out = ws / "scored.json"
    done = subprocess.run(
        [sys.executable, str(STREAMS / "oracle.py"), "score", str(ws), str(stream), "--json",
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


def _assert_references_pass_every_task_and_rule(ws: Path, stream: Path) -> None:
    """The stream's references, committed as runs, pass its five tasks and its 7 rule checks."""
    ids = [json.loads(line)["id"] for line in stream.read_text().splitlines() if line.strip()]
    for task_id in ids:
        _commit(ws, task_id, _reference(task_id), stream.stem)
    rows = _score(ws, stream)
    assert [rows[t]["task"] for t in ids] == [True] * 5
    parts = [part for t in ids for part in rows[t]["parts"]]  # type: ignore[attr-defined]
    assert len(parts) == 7 and all(ok for _, ok in parts)


def test_the_geometry_stream_scores_references_and_code_that_forgot_its_rules(
    tmp_path: Path,
) -> None:
    _assert_references_pass_every_task_and_rule(tmp_path / "ref", GEOM)
    # Right values, no docstring, not rounded: each task kept, each rule part failed.
    forgot = {
        "g3": "import math\ndef triangle_area(a, b, c):\n    if a + b <= c or a + c <= b or "
        "b + c <= a:\n        raise ValueError(a)\n    s = (a + b + c) / 2\n"
        "    return math.sqrt(s * (s - a) * (s - b) * (s - c))\n",
        # The changed rule: two places where three are in force.
        "g5": _reference("g5").replace(", 3)", ", 2)"),
    }
    for task_id, source in forgot.items():
        _commit(tmp_path / "bad", task_id, source, "h-geom")
    rows = _score(tmp_path / "bad", GEOM)
    assert rows["g3"]["task"] is True
    assert rows["g3"]["parts"] == [["docstring", False], ["rounded: 2 places", False]]
    assert rows["g5"]["parts"] == [["docstring", True], ["rounded: 3 places", False]]


def test_the_config_stream_scores_references_and_code_that_forgot_its_rules(
    tmp_path: Path,
) -> None:
    conf = STREAMS / "h-conf.jsonl"
    _assert_references_pass_every_task_and_rule(tmp_path / "ref", conf)
    # Right values, a print and no Examples: section; then the withdrawn section kept, not the new.
    forgot = {
        "c3": "def get_list(config, key, sep=','):\n    '''Split a value.'''\n"
        "    print(key)\n    return [i.strip() for i in config[key].split(sep) if i.strip()]\n",
        "c5": _reference("c5").replace("Raises:", "Examples:"),
    }
    for task_id, source in forgot.items():
        _commit(tmp_path / "bad", task_id, source, "h-conf")
    rows = _score(tmp_path / "bad", conf)
    assert rows["c3"]["task"] is True
    assert rows["c3"]["parts"] == [["never prints", False], ["Examples: section", False]]
    assert rows["c5"]["parts"] == [["never prints", True], ["Raises: section", False]]
