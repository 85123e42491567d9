"""Static checks of generated code: hard-coded outputs (reflector), syntax and stubs (tools)."""

from __future__ import annotations

from atom_agent.checks.hardcoding import Thresholds, check_file, check_source
from atom_agent.checks.source import python_problems

__all__ = [
    "Thresholds",
    "check_file",
    "check_source",
    "python_problems",
]
