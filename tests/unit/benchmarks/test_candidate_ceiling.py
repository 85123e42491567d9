"""benchmarks/candidate_ceiling.py: does any candidate a run wrote pass the hidden oracle?"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "candidate_ceiling",
    Path(__file__).resolve().parents[3] / "benchmarks" / "candidate_ceiling.py",
)
assert _SPEC is not None and _SPEC.loader is not None
ceiling = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ceiling)

# An oracle in the shape of shared/devtasks/oracle.py: _load(path, name, ns) and CHECKS.
ORACLE = """\
import importlib.util, sys


def _load(path, name, ns):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception:
        return
    ns.update({k: v for k, v in vars(mod).items() if not k.startswith("_")})


def check_double(ns):
    assert ns["double"](3) == 6, "double(3)"


CHECKS = {"t-double": check_double}
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_passing_candidate_that_was_not_committed_is_lost_by_selection(tmp_path: Path) -> None:
    oracle = _write(tmp_path / "oracle.py", ORACLE)
    run = tmp_path / "runs" / "tasks.t-double"
    wrong, right = "def double(x):\n    return x + 2\n", "def double(x):\n    return 2 * x\n"
    _write(run / "plain" / "impl.py", wrong)
    attempt = run / "steps" / "s1" / "attempts" / "1"
    _write(attempt / "candidates" / "0" / "impl.py", wrong)
    _write(attempt / "candidates" / "1" / "impl.py", right)
    _write(attempt / "candidates" / "2" / "impl.py", "while True:\n    pass\n")
    _write(attempt / "candidates" / "recombined" / "0" / "impl.py", "def double(:\n")
    origins = [
        {"k": 0, "origin": "plain"},
        {"k": 1, "origin": "repair"},
        {"k": 2, "origin": "witness"},
    ]
    _write(attempt / "drafts.json", json.dumps({"candidates": origins}))
    _write(run / "steps" / "s1" / "committed" / "artifacts" / "impl.py", wrong)
    ceiling.TIMEOUT_S = 5  # the looping candidate gets no verdict, and costs only this

    row = ceiling.score_run(oracle, "t-double", run)

    assert row["handed_back"] == "fail" and "double(3)" in row["why"]
    assert row["written"] == {"plain": 2, "repair": 1, "witness": 1, "recombined": 1}
    assert row["passing"] == {"plain": 0, "repair": 1, "witness": 0, "recombined": 0}
    assert row["any_passes"] is True
    # --why: each candidate's verdict, the oracle's reason and where it is.
    by_path = {where: (origin, status, why) for origin, status, why, where in row["verdicts"]}
    assert by_path["steps/s1/attempts/1/candidates/1/impl.py"] == ("repair", "PASS", "")
    origin, status, why = by_path["plain/impl.py"]
    assert (origin, status) == ("plain", "fail") and "double(3)" in why
    # The same run with the right code committed: handed back passes.
    _write(run / "steps" / "s1" / "committed" / "artifacts" / "impl.py", right)
    assert ceiling.score_run(oracle, "t-double", run)["handed_back"] == "PASS"
