from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from atom_agent import Context


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[Context]:
    # These tests script each model call in turn; candidate zero (one more call first) has its
    # own tests (test_candidate_zero.py) and is on wherever a test builds its own Context.
    yield Context(
        workspace=str(tmp_path / "ws"), sandbox_timeout_s=30, max_attempts=2, candidate_zero=False
    )
