"""benchmarks/heldout/oracle.py: the references pass, a broken behaviour fails, absent runs say so.

The oracle runs as a subprocess on fake workspaces, exactly as the evaluation calls it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout"
TASKS = [json.loads(line) for line in (HELDOUT / "tasks.jsonl").read_text().splitlines()]
IDS = [task["id"] for task in TASKS]

# One behaviour of each reference broken (text replaced), which its check must catch.
BROKEN = {
    "h-duration": ('return "".join(parts) or "0s"', 'return "".join(parts)'),
    "h-wrap": ("<= width", "< width"),
    "h-csvline": ("pieces.append(QUOTE)", "pieces.append(QUOTE * 2)"),
    "h-bucket": ("max(0.0, now - self._last)", "now - self._last"),
    "h-lru": ("if key not in self._data and len(", "if len("),
    "h-calendar": ("s < end and start < e", "s <= end and start <= e"),
}

# Names and signatures right, no behaviour.
STUB = """
def parse_duration(text):
    raise NotImplementedError


def format_duration(seconds):
    raise NotImplementedError
"""


def _reference(task_id: str) -> str:
    return (HELDOUT / "reference" / f"{task_id}.py").read_text(encoding="utf-8")


def _broken(task_id: str) -> str:
    old, new = BROKEN[task_id]
    source = _reference(task_id)
    assert source.count(old) == 1, f"{task_id}: the text to break is not in the reference once"
    return source.replace(old, new)


def _commit(ws: Path, task_id: str, source: str, step: str = "step1") -> None:
    folder = ws / "runs" / f"ref.{task_id}" / "steps" / step / "committed" / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "impl.py").write_text(source, encoding="utf-8")


def _result(ws: Path, task_id: str, relative: str, source: str) -> None:
    path = ws / "runs" / f"ref.{task_id}" / "result" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")


def _oracle(ws: Path) -> tuple[dict[str, str], str]:
    """The verdict after each task id, and the total line."""
    done = subprocess.run(
        [sys.executable, str(HELDOUT / "oracle.py"), str(ws), "ref"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    *lines, total = done.stdout.splitlines()
    verdicts = dict(line.split(": ", 1) for line in lines)
    assert list(verdicts) == IDS, done.stdout
    return verdicts, total


def test_the_tasks_and_the_checks_agree() -> None:
    spec = importlib.util.spec_from_file_location("heldout_oracle", HELDOUT / "oracle.py")
    assert spec is not None and spec.loader is not None
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    assert list(oracle.CHECKS) == IDS and len(IDS) == 6
    assert all(task["task"].endswith("Include pytest tests.") for task in TASKS)
    assert sorted(p.stem for p in (HELDOUT / "reference").glob("*.py")) == sorted(IDS)


def test_every_reference_passes(tmp_path: Path) -> None:
    for task_id in IDS:
        _commit(tmp_path, task_id, _reference(task_id))
    verdicts, total = _oracle(tmp_path)
    assert verdicts == dict.fromkeys(IDS, "PASS")
    assert total == "held-out tasks passed: 6/6"


def test_one_broken_behaviour_fails_each_task(tmp_path: Path) -> None:
    for task_id in IDS:
        _commit(tmp_path, task_id, _broken(task_id))
    verdicts, total = _oracle(tmp_path)
    failed = {task_id: verdict.split()[0] for task_id, verdict in verdicts.items()}
    assert failed == dict.fromkeys(IDS, "FAIL"), verdicts
    assert total == "held-out tasks passed: 0/6"


def test_missing_runs_stubs_and_import_errors(tmp_path: Path) -> None:
    _commit(tmp_path, "h-duration", STUB)
    _commit(tmp_path, "h-wrap", "raise RuntimeError('broken at import')\n")
    verdicts, total = _oracle(tmp_path)
    assert verdicts["h-duration"].startswith("FAIL NotImplementedError")
    assert verdicts["h-wrap"] == "FAIL AssertionError: missing wrap_words"
    assert all(verdicts[task_id] == "no run" for task_id in IDS[2:])
    assert total == "held-out tasks passed: 0/6"


def test_later_modules_win_and_tests_are_skipped(tmp_path: Path) -> None:
    _commit(tmp_path, "h-duration", _broken("h-duration"))
    _commit(tmp_path, "h-duration", "print('noise')\n" + _reference("h-duration"), "step2")
    _commit(tmp_path, "h-csvline", _reference("h-csvline"))
    _commit(tmp_path, "h-csvline", _broken("h-csvline"), "step2")
    _commit(tmp_path, "h-wrap", _broken("h-wrap"))
    _result(tmp_path, "h-wrap", "pkg/wrapping.py", _reference("h-wrap"))
    _result(
        tmp_path, "h-wrap", "pkg/test_wrapping.py", "def wrap_words(text, width):\n    return []\n"
    )
    verdicts, total = _oracle(tmp_path)
    assert verdicts["h-duration"] == "PASS"
    assert verdicts["h-csvline"].startswith("FAIL AssertionError")
    assert verdicts["h-wrap"] == "PASS"
    assert total == "held-out tasks passed: 2/6"
