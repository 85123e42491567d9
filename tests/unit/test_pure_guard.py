"""`make pure` stays pure: a test not marked ``processes`` cannot start one (unit conftest)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_pure_test_that_starts_a_process_fails_and_names_the_list() -> None:
    with pytest.raises(AssertionError, match="add its module to STARTS_PROCESSES"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
