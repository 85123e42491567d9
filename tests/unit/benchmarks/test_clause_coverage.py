"""benchmarks/clause_coverage.py: the share of clauses code gives a check, and the rules fired."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "clause_coverage", Path(__file__).resolve().parents[3] / "benchmarks" / "clause_coverage.py"
)
assert _SPEC is not None and _SPEC.loader is not None
clause_coverage = importlib.util.module_from_spec(_SPEC)
sys.modules["clause_coverage"] = clause_coverage  # its dataclasses look their module up
_SPEC.loader.exec_module(clause_coverage)

TASKS = [
    ("t1", "Write halve(n: int) -> int; halve(10) returns 5. It rounds towards zero."),
    ("t2", "Write isqrt(n: int) -> int. A negative n raises ValueError. Include pytest tests."),
]


def test_coverage_counts_clauses_with_a_check_and_the_rules_that_fired(tmp_path: Path) -> None:
    figures = clause_coverage.measure(TASKS)
    # t1: the signature, the example, the rounding (unchecked); t2: signature, the error.
    assert (figures.tasks, figures.clauses, figures.covered) == (2, 5, 4)
    assert figures.rules["stated_signature"] == 2
    assert figures.rules["worked_example"] == 1 and figures.rules["param_negative"] == 1
    assert figures.unchecked == [("t1", "It rounds towards zero.")]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": i, "task": t}) + "\n" for i, t in TASKS))
    assert clause_coverage.read_jsonl(path) == TASKS
