"""The one order of candidates by execution: honest code first, then the checks, the drafts' tests.

Honest code (no gaming finding), then the task's checks, the tests kept, the contract's checks,
and last the drafts' own tests.

Every place that chooses code ranks with :func:`rank`: the candidate pool
(:mod:`~atom_agent.selection.pool`: an attempt's drafts, the tool loop's start and what it
wrote, a project step's edits), candidate zero's whole-task samples and the floor
(:mod:`~atom_agent.selection.candidates`). A candidate replaces the best so far only when it
ranks strictly higher, so the earliest wins a tie: candidate zero (the plain answer) or the
step's earlier best is replaced only by code that executes better.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from atom_agent.checks.contract import ContractReport


class Rank(NamedTuple):
    """How well code executes, compared as a tuple: higher is better."""

    honest: int
    """0 when the code answers the checks instead of the task (a gaming finding), else 1:
    code that games its checks ranks below any that does not, whatever it passes."""
    task: int
    """Checks the task states that passed: one outranks any number of the others."""
    kept: int
    """Minus the project's tests it breaks (0 when the suite was not run for it)."""
    passed: int
    """Checks of the contract that passed in all (the planner model's and reproduction checks
    too; the drafts' own tests not)."""
    own: int
    """The drafts' own tests that passed: between candidates the contract ties, code that
    meets them too beats code that meets the contract alone."""


def rank(
    report: ContractReport | None,
    *,
    ignore: Collection[int] = (),
    broken: int | None = None,
    gamed: bool = False,
) -> Rank:
    """`report`'s standing among candidates run on the same checks.

    Args:
        report: the checks' results on the candidate (None: no checks ran on it, which ranks
            below any report).
        ignore: indexes of checks that count for nothing (the suspect ones: cross-examination
            discounted them).
        broken: the project's tests that passed before and fail with the candidate (None:
            the suite was not run for it).
        gamed: the code answers the checks instead of the task
            (:func:`~atom_agent.checks.gaming.gaming_findings` found something).
    """
    kept, honest = -(broken or 0), 0 if gamed else 1
    if report is None:
        return Rank(honest, -1, kept, -1, -1)
    passed = [r for i, r in enumerate(report.results) if i not in ignore and r.status == "passed"]
    own = sum(1 for r in passed if r.check.origin == "own")
    task = sum(1 for r in passed if r.check.origin == "task")
    return Rank(honest, task, kept, len(passed) - own, own)
