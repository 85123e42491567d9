"""An attempt's candidate pool: every implementation written for it, run on its checks.

Candidates compete by execution only (:func:`~atom_agent.selection.rank.rank`). Checks
cross-examination discounted (suspect) count for nothing; a check some candidate passes is
never suspect. The drafts' own tests run beside the contract (after its checks, so a check's
index is the same in every report), and code that answers the checks instead of the task
(:mod:`~atom_agent.checks.gaming`) never passes and ranks below all honest code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.gaming import gaming_findings
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import IMPL_FILE, Check
from atom_agent.workspace.atomic import atomic_write_text

from .rank import rank


@dataclass
class Candidate:
    """One sampled implementation and what the contract said of it."""

    k: int
    source: str
    temperature: float
    informed: bool
    """Whether it was written after seeing check results (then not independent of them)."""
    origin: str = "draft"
    """How it was written: ``plain`` (candidate zero), ``draft``, ``witness``, ``earlier`` (a
    previous attempt's best)."""
    report: ContractReport | None = None
    path: Path | None = None
    gaming: list[str] = field(default_factory=list)
    """Where the code answers the checks instead of the task (described findings)."""


@dataclass
class Drafts:
    """What an attempt's drafting did: the conversation, the candidates, the one kept.

    ``messages`` is the draft's conversation; the witnesses are sampled in conversations of
    their own, whose replies are ``side``.
    """

    messages: list[BaseMessage] = field(default_factory=list)
    side: list[AIMessage] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    suspect: dict[int, str] = field(default_factory=dict)
    """Checks every independent witness contradicted (index → why): they decide nothing."""
    own: list[Check] = field(default_factory=list)
    """Every own test of the step: the drafts' and its earlier attempts' (the reflector runs
    them all, and names those the task outranks)."""
    own_run: list[Check] = field(default_factory=list)
    """The own tests the candidates ran after the contract's checks: those no check the task
    states contradicts."""

    def passes(self, candidate: Candidate) -> bool:
        """It met every runnable check that is not suspect (own tests too), honestly."""
        report = candidate.report
        return (
            report is not None
            and report.all_passed(ignore=set(self.suspect))
            and not candidate.gaming
        )

    def consider(
        self,
        source: str,
        *,
        folder: Path,
        checks: Sequence[Check],
        defines: Sequence[str],
        available: Sequence[str],
        python_path: Sequence[Path],
        runner: SandboxRunner,
        limits: Limits,
    ) -> Candidate:
        """Add code written before this attempt (the step's best so far) as a candidate.

        It competes by execution like the attempt's own drafts; it is marked informed (it may
        have seen check results) so it never testifies as an independent witness.
        """
        candidate = Candidate(k=len(self.candidates), source=source, temperature=-1.0,
                              informed=True, origin="earlier")  # fmt: skip
        self.candidates.append(candidate)
        run_candidate(candidate, folder, checks, defines, available, python_path, runner, limits)
        self.keep_satisfiable()
        return candidate

    def keep_satisfiable(self) -> None:
        """A check some candidate passed is not suspect: code written for the task meets it.

        Witnesses sampled from one model share its blind spots; their agreement with a wrong
        draft is no evidence against a check another candidate satisfies.
        """
        for i in list(self.suspect):
            if any(
                c.report is not None and i < len(c.report.results)
                and c.report.results[i].status == "passed"
                for c in self.candidates
            ):  # fmt: skip
                del self.suspect[i]

    @property
    def spent(self) -> list[BaseMessage]:
        """Every message of the drafting, witnesses' replies last (history and usage)."""
        return [*self.messages, *self.side]

    @property
    def best(self) -> Candidate | None:
        """The first candidate that passed, else the one that ranks highest (earliest on ties).

        Suspect checks count for nothing. The earliest winning a tie, candidate zero (the plain
        answer) is replaced only by code that executes better.
        """
        usable = [c for c in self.candidates if c.source.strip()]
        passing = next((c for c in usable if self.passes(c)), None)
        if passing is not None or not usable:
            return passing
        ignore = set(self.suspect)
        return max(
            usable, key=lambda c: (*rank(c.report, ignore=ignore, gamed=bool(c.gaming)), -c.k)
        )


def run_candidate(
    candidate: Candidate,
    folder: Path,
    checks: Sequence[Check],
    defines: Sequence[str],
    available: Sequence[str],
    python_path: Sequence[Path],
    runner: SandboxRunner,
    limits: Limits,
) -> ContractReport:
    """Write `candidate` to ``folder/<k>/impl.py`` and run the contract on it (its report).

    Its gaming findings against the same checks are set too (``candidate.gaming``).
    """
    candidate.path = folder / str(candidate.k)
    atomic_write_text(candidate.path / IMPL_FILE, candidate.source)
    candidate.report = run_contract(
        checks,
        staging=candidate.path,
        runner=runner,
        limits=limits,
        python_path=[candidate.path, *python_path],
        defines=defines,
        available=available,
    )
    files = {IMPL_FILE: candidate.source}
    candidate.gaming = [f.describe() for f in gaming_findings(files, checks, defines)]
    return candidate.report
