"""Sandboxed runs of generated code: a pluggable runner interface and a subprocess runner."""

from __future__ import annotations

from atom_agent.sandbox.base import Limits, RunResult, SandboxRunner, TestCounts
from atom_agent.sandbox.subprocess_runner import Isolation, SubprocessRunner, probe_isolation

__all__ = [
    "Isolation",
    "Limits",
    "RunResult",
    "SandboxRunner",
    "SubprocessRunner",
    "TestCounts",
    "probe_isolation",
]
