"""The suite's scheduling: every file that decodes with the model runs in one xdist group."""

from __future__ import annotations

from pathlib import Path

import tests.conftest as suite

TESTS = Path(__file__).resolve().parents[1]

DECODING = {
    "tests/integration/test_llama_server.py",
    "tests/integration/test_local_conformance.py",
    "tests/integration/test_local_model.py",
    "tests/integration/test_local_run.py",
    "tests/integration/test_local_sized_calls.py",
    "tests/integration/test_served_runs.py",
}


def test_the_model_group_is_the_files_that_decode_and_no_other() -> None:
    files = sorted(p.relative_to(TESTS.parent).as_posix() for p in TESTS.rglob("test_*.py"))
    grouped = {f for f in files if suite.test_group(f"{f}::test_x") == suite.MODEL_GROUP}
    assert grouped == DECODING
    # A file that only names the model (a weights path override) runs on its own.
    named = "tests/unit/models/test_weights.py"
    assert suite.test_group(f"{named}::test_local_model_path_override") == named
