"""Static checks the reflector runs on generated code (e.g. hard-coded outputs)."""

from __future__ import annotations

from atom_agent.checks.hardcoding import (
    Finding,
    HardcodingReport,
    Thresholds,
    check_file,
    check_source,
)

__all__ = ["Finding", "HardcodingReport", "Thresholds", "check_file", "check_source"]
