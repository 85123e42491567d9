"""The candidate pool: code from named sources, proved as it comes, one kept and why.

Every choice of a step's code goes through a :class:`Pool`: an attempt's drafts and witnesses
(:mod:`~atom_agent.selection.drafts`), the code a module step's tool loop starts from and what
it wrote, and a project step's edits. A node offers code with the source it came from
(``plain``, ``draft``, ``witness``, ``task_sample``, ``earlier``, ``tool loop``,
``project_edit``); the pool proves it with the callable it was given (the step's checks, run in
the sandbox or in the project's checkout) and says which candidate is kept and why. The nodes
ask it; they keep no candidate of their own.

Candidates compete by execution only (:func:`~atom_agent.selection.rank.rank`): the first that
passes is kept, else the one that ranks highest, the earliest on ties; the incumbents (candidate
zero, the plain answer, and the step's earlier best) win every tie whenever they were offered,
so new code replaces them only when it executes strictly better. Checks cross-examination discounted
(suspect) count for nothing; a check some candidate passes is never suspect. The drafts' own
tests run beside the contract (after its checks, so a check's index is the same in every
report), and code that answers the checks instead of the task
(:mod:`~atom_agent.checks.gaming`) never passes and ranks below all honest code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.gaming import gaming_findings
from atom_agent.replies import importing_dependencies
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import IMPL_FILE, Check
from atom_agent.workspace.atomic import atomic_write_text

from .rank import Rank, rank

INCUMBENTS = frozenset({"plain", "earlier"})
"""The sources of code a step already had: a tie never replaces them with new code."""


@dataclass
class Candidate:
    """One implementation offered to a pool, and what proving it said."""

    k: int
    source: str
    """The code ('' when the offer had none: a reply without usable code, code already tried)."""
    temperature: float
    """The temperature it was sampled at (-1: not sampled in this attempt)."""
    informed: bool
    """Whether it was written after seeing check results (then not independent of them)."""
    origin: str = "draft"
    """Its source: ``plain`` (candidate zero), ``draft``, ``witness``, ``task_sample``,
    ``earlier`` (a previous attempt's best), ``tool loop``, ``project_edit``."""
    report: ContractReport | None = None
    """The checks' results on it (None: not proved, or no check to run it on)."""
    path: Path | None = None
    gaming: list[str] = field(default_factory=list)
    """Where the code answers the checks instead of the task (described findings)."""
    broken: int | None = None
    """The project's tests that passed before and fail with it (None: the suite was not run)."""
    note: str = ""
    """Why an offer without code is no candidate (the edit's error, for the record)."""
    same_as: int | None = None
    """The earlier candidate whose code this offer repeated (a pool of distinct code only)."""

    @property
    def incumbent(self) -> bool:
        """It is code the step already had: the plain answer or an earlier attempt's best."""
        return self.origin in INCUMBENTS


Prove = Callable[[Candidate], None]
"""Runs a candidate's checks and sets what they said (report; gaming findings, broken tests)."""


@dataclass(frozen=True)
class Yield:
    """What one source gave a pool: offers, offers with code, candidates passing, kept."""

    drawn: int = 0
    code: int = 0
    met: int = 0
    kept: int = 0


@dataclass
class Pool:
    """Candidates from named sources, each proved as it is offered; the best one kept."""

    candidates: list[Candidate] = field(default_factory=list)
    suspect: dict[int, str] = field(default_factory=dict)
    """Checks every independent witness contradicted (index → why): they decide nothing."""
    prove: Prove | None = field(default=None, repr=False, compare=False)
    """How offered code is proved (None: nothing may be offered with code)."""
    distinct: bool = False
    """Code already in the pool is not proved again: the offer is recorded as a repeat."""

    def offer(
        self,
        source: str,
        *,
        origin: str,
        temperature: float = -1.0,
        informed: bool = False,
        note: str = "",
    ) -> Candidate:
        """Add `source` from `origin` as the next candidate, proved at once when it has code.

        An offer without code (`note`: why) is counted for its source and never proved.
        """
        k = len(self.candidates)
        repeat = self._holding(source) if self.distinct else None
        if repeat is not None:
            source, note = "", "the same code as an earlier candidate"
        candidate = Candidate(k=k, source=source, temperature=temperature, informed=informed,
                              origin=origin, note=note, same_as=repeat)  # fmt: skip
        self.candidates.append(candidate)
        if source.strip():
            if self.prove is None:
                raise RuntimeError(f"pool: candidate {k} ({origin}) has no way to be proved")
            self.prove(candidate)
            self.keep_satisfiable()
        return candidate

    def _holding(self, source: str) -> int | None:
        """The candidate that holds exactly `source`, if one does."""
        return next((c.k for c in self.candidates if c.source.strip() and c.source == source),
                    None)  # fmt: skip

    def passes(self, candidate: Candidate) -> bool:
        """It has code, met every runnable check that is not suspect, honestly, breaking no test.

        With no check to run it on (no report) code that breaks no test passes: nothing else
        tells candidates apart.
        """
        report = candidate.report
        return (
            bool(candidate.source.strip())
            and (report is None or report.all_passed(ignore=set(self.suspect)))
            and not candidate.gaming
            and not candidate.broken
        )

    def rank_of(self, candidate: Candidate) -> Rank:
        """Its standing among the pool's candidates (suspect checks count for nothing)."""
        return rank(candidate.report, ignore=set(self.suspect), broken=candidate.broken,
                    gamed=bool(candidate.gaming))  # fmt: skip

    @property
    def best(self) -> Candidate | None:
        """The first candidate that passed, else the one that ranks highest (earliest on ties).

        The incumbents (candidate zero, the plain answer, and the step's earlier best) win
        every tie, whenever they were offered: they are replaced only by code that executes
        strictly better. None: no offer had code.
        """
        usable = [c for c in self.candidates if c.source.strip()]
        passing = [c for c in usable if self.passes(c)]
        if passing or not usable:
            return min(passing, key=lambda c: (not c.incumbent, c.k), default=None)
        return max(usable, key=lambda c: (*self.rank_of(c), c.incumbent, -c.k))

    @property
    def met(self) -> bool:
        """The kept candidate met every check (no more candidates are needed)."""
        best = self.best
        return best is not None and self.passes(best)

    def why(self) -> str:
        """Which candidate is kept and why, in one line (for the attempt's record)."""
        best = self.best
        if best is None:
            return "no candidate: no offer had code"
        which = f"candidate {best.k} ({best.origin})"
        among = "the code the step had wins ties" if best.incumbent else "the earliest among equals"
        if self.passes(best):
            return f"{which}: it meets every check ({among})"
        ranked = self.rank_of(best)
        return (
            f"{which}: none met every check; it ranks highest (the task's checks {ranked.task}, "
            f"all {ranked.passed}, own tests {ranked.own}; {among})"
        )

    def yields(self) -> dict[str, Yield]:
        """Per source, in the order first offered: what it gave (offers, code, passing, kept)."""
        best = self.best
        counts: dict[str, Yield] = {}
        for c in self.candidates:
            was = counts.get(c.origin, Yield())
            counts[c.origin] = Yield(
                drawn=was.drawn + 1,
                code=was.code + bool(c.source.strip()),
                met=was.met + self.passes(c),
                kept=was.kept + (c is best),
            )
        return counts

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


@dataclass
class Drafts(Pool):
    """An attempt's pool as drafting left it: the conversation, the own tests, the candidates.

    ``messages`` is the draft's conversation; the witnesses are sampled in conversations of
    their own, whose replies are ``side``.
    """

    messages: list[BaseMessage] = field(default_factory=list)
    side: list[AIMessage] = field(default_factory=list)
    own: list[Check] = field(default_factory=list)
    """Every own test of the step: the drafts' and its earlier attempts' (the reflector runs
    them all, and names those the task outranks)."""
    own_run: list[Check] = field(default_factory=list)
    """The own tests the candidates ran after the contract's checks: those no check the task
    states contradicts."""
    cut: str = ""
    """Why drafting stopped before every witness was heard (the run's time limit refused the
    next call), '' when it was not cut: the attempt is decided on the candidates it has."""

    @property
    def spent(self) -> list[BaseMessage]:
        """Every message of the drafting, witnesses' replies last (history and usage)."""
        return [*self.messages, *self.side]


@dataclass(frozen=True)
class ContractProver:
    """Proves a module candidate: its code in ``folder/<k>/impl.py``, the checks run on it.

    A candidate's own copies of names the step's dependencies define are replaced by imports
    of them first (:func:`~atom_agent.replies.importing_dependencies`): what is proved is the
    code the step would commit. Its gaming findings against the same checks are set too.
    """

    folder: Path
    checks: Sequence[Check]
    defines: Sequence[str]
    available: Sequence[str]
    python_path: Sequence[Path]
    runner: SandboxRunner
    limits: Limits
    exports: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """The dependencies' modules and the names each defines (nothing: no dependency)."""

    def with_checks(self, checks: Sequence[Check]) -> ContractProver:
        """The same prover running `checks`."""
        return replace(self, checks=list(checks))

    def __call__(self, candidate: Candidate) -> None:
        """Prove `candidate`: set its code as proved, its folder, report and gaming findings."""
        if self.exports:
            candidate.source = importing_dependencies(candidate.source, self.exports,
                                                      self.defines)  # fmt: skip
        candidate.path = self.folder / str(candidate.k)
        atomic_write_text(candidate.path / IMPL_FILE, candidate.source)
        candidate.report = run_contract(
            self.checks,
            staging=candidate.path,
            runner=self.runner,
            limits=self.limits,
            python_path=[candidate.path, *self.python_path],
            defines=self.defines,
            available=self.available,
        )
        files = {IMPL_FILE: candidate.source}
        found = gaming_findings(files, self.checks, self.defines)
        candidate.gaming = [f.describe() for f in found]
