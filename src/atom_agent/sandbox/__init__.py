"""Sandboxed runs of generated code: the runner interface, bubblewrap and namespace runners."""

from __future__ import annotations

from atom_agent.sandbox import choice
from atom_agent.sandbox.base import Limits, RunResult, SandboxRunner, TestCounts
from atom_agent.sandbox.bubblewrap import BubblewrapRunner, probe_bubblewrap
from atom_agent.sandbox.cgroups import probe_cgroups
from atom_agent.sandbox.choice import default_runner, sandbox_status
from atom_agent.sandbox.subprocess_runner import SubprocessRunner, probe_isolation

__all__ = [
    "BubblewrapRunner",
    "Limits",
    "choice",
    "RunResult",
    "SandboxRunner",
    "SubprocessRunner",
    "TestCounts",
    "default_runner",
    "probe_bubblewrap",
    "probe_cgroups",
    "probe_isolation",
    "sandbox_status",
]
