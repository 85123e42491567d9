"""The suite's scheduling: a test file is a group; decoding jobs side by side get a thread each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tests.conftest as suite

from atom_agent.errors import ModelUnavailableError
from atom_agent.models.local import default_threads

TESTS = Path(__file__).resolve().parents[1]


def test_every_file_is_its_own_group() -> None:
    files = sorted(p.relative_to(TESTS.parent).as_posix() for p in TESTS.rglob("test_*.py"))
    assert {suite.test_group(f"{f}::test_x[a::b]") for f in files} == set(files)


def test_two_workers_decode_on_one_thread_each_and_one_process_on_every_core() -> None:
    assert suite.model_threads(2) == "1" and suite.model_threads(4) == "1"
    assert suite.model_threads(1) is None
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1) > 1:
        assert default_threads() == 1  # this very run: the model loads with one thread


def test_the_model_s_threads_come_from_the_environment_or_the_usable_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATOM_LOCAL_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.delenv("ATOM_LOCAL_THREADS")
    assert default_threads() == len(os.sched_getaffinity(0))
    for bad in ("0", "two", "-1", "1.5"):
        monkeypatch.setenv("ATOM_LOCAL_THREADS", bad)
        with pytest.raises(ModelUnavailableError, match="ATOM_LOCAL_THREADS"):
            default_threads()
