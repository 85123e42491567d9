"""Fixtures of the project tests."""

from __future__ import annotations

import pytest
from tests.unit.sandbox.conftest import make_runner

from atom_agent.sandbox import SandboxRunner, probe_bubblewrap


@pytest.fixture
def runner() -> SandboxRunner:
    """The strongest runner here (bubblewrap shows the sandbox only pytest and hypothesis)."""
    return make_runner("bubblewrap" if probe_bubblewrap().usable else "namespaces")
