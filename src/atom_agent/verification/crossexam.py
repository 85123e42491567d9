"""Cross-examination: before a failing check rejects code, other programs testify.

Generated checks and tests are wrong often; agreement between independently sampled programs
and the checks picks correct code far better than either alone (CodeT, Chen et al. 2022). A
failing check is run against implementations that never saw it (the attempt's witnesses and
candidate zero's whole-task samples). When at least two of them ran it and *all* give the
very result the examined code gives, the check is contradicted by every independent witness:
it is marked *suspect* and neither accepts nor rejects the code. A check stated in the task
itself is the user's word and is never suspect.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import IMPL_FILE, Check

MIN_WITNESSES = 2
"""Independent implementations that must all contradict a check before it is suspect."""
UNOUTVOTED = ("task", "own")
"""Origins of checks no agreement of witnesses makes suspect."""


@dataclass
class Testimony:
    """What the independent implementations said."""

    witnesses: int = 0
    suspect_checks: list[int] = field(default_factory=list)
    """Indexes (into the step's checks) of the checks every witness contradicted."""
    reasons: dict[int, str] = field(default_factory=dict)

    def to_dict(self, checks: Sequence[Check]) -> dict[str, Any]:
        """JSON-ready (verdict.json)."""
        return {
            "witnesses": self.witnesses,
            "suspect_checks": [
                {"check": checks[i].describe(), "reason": self.reasons.get(i, "")}
                for i in self.suspect_checks
            ],
        }


def cross_examine(
    *,
    checks: Sequence[Check],
    examined: ContractReport,
    witnesses: Sequence[str],
    runner: SandboxRunner,
    limits: Limits,
    python_path: Sequence[Path],
    defines: Sequence[str],
    available: Sequence[str],
) -> Testimony:
    """Run the examined code's failing checks against `witnesses`.

    Args:
        checks: the step's contract.
        examined: the contract's report on the examined code.
        witnesses: sources of independent implementations (never shown the checks).
        runner: the sandbox runner.
        limits: its limits.
        python_path: directories after the witness's own (the dependencies).
        defines: what the step defines (for check validation).
        available: what its dependencies define.
    """
    testimony = Testimony(witnesses=len(witnesses))
    failing = [r for r in examined.failed if r.check.origin not in UNOUTVOTED]
    if not witnesses or not failing:
        return testimony
    reports: list[ContractReport] = []
    with tempfile.TemporaryDirectory(prefix="atom-witness-") as tmp:
        for n, source in enumerate(witnesses):
            folder = Path(tmp) / str(n)
            folder.mkdir()
            (folder / IMPL_FILE).write_text(source, encoding="utf-8")
            reports.append(
                run_contract(
                    checks,
                    staging=folder,
                    runner=runner,
                    limits=limits,
                    python_path=[folder, *python_path],
                    defines=defines,
                    available=available,
                )
            )
    testimony.reasons = suspects(examined, reports)
    testimony.suspect_checks = sorted(testimony.reasons)
    return testimony


def suspects(examined: ContractReport, reports: Sequence[ContractReport]) -> dict[int, str]:
    """The examined code's failing checks that every witness contradicts, with why.

    A check is suspect when at least MIN_WITNESSES independent implementations ran it, none
    met it, and every one of them gives exactly the result the examined code gives. Checks
    the task states are never suspect, nor are the drafts' own tests: witnesses are samples of
    the model that wrote them, and a model agreeing with itself does not outrank its own test
    (a capable model's tests are usually right; a wrong draft's witnesses often share its bug).
    """
    found: dict[int, str] = {}
    for i, mine in enumerate(examined.results):
        if mine.status not in ("failed", "error", "timeout") or mine.check.origin in UNOUTVOTED:
            continue
        said = [r.results[i] for r in reports if i < len(r.results) and r.results[i].executed]
        if len(said) >= MIN_WITNESSES and all(
            r.status != "passed" and r.got == mine.got for r in said
        ):
            found[i] = (
                f"all {len(said)} independent implementations give {mine.got or mine.reason} too"
            )
    return found
