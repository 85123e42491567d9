"""The candidate pool on its own: offers from named sources, proved, one kept, and why.

No graph, no sandbox: a prover that looks up what each piece of code "passes" stands in for
the step's checks, so each rule of keeping is pinned by the reports alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from atom_agent.checks.contract import CheckResult, CheckStatus, ContractReport
from atom_agent.selection.pool import Candidate, Pool, Yield
from atom_agent.state import Check

TASK = [Check(call=f"f({i})", expect=str(i), origin="task") for i in range(2)]
MODEL = [Check(call=f"f({i})", expect=str(i), origin="planner") for i in range(2, 4)]
CHECKS = [*TASK, *MODEL]
"""Two checks the task states, then two of the planner model's."""


def report(*statuses: CheckStatus) -> ContractReport:
    return ContractReport([CheckResult(c, s) for c, s in zip(CHECKS, statuses, strict=True)])


P: CheckStatus = "passed"
F: CheckStatus = "failed"
ALL = report(P, P, P, P)
TASK_ONLY = report(P, P, F, F)
MODEL_ONLY = report(F, F, P, P)
ONE_TASK = report(P, F, F, F)
NONE = report(F, F, F, F)


class Prover:
    """Proves code by looking its report up (and its broken tests, its gaming findings)."""

    def __init__(
        self,
        reports: Mapping[str, ContractReport | None],
        broken: dict[str, int] | None = None,
        gaming: dict[str, list[str]] | None = None,
    ) -> None:
        self.reports, self.broken, self.gaming = reports, broken or {}, gaming or {}
        self.proved: list[str] = []

    def __call__(self, candidate: Candidate) -> None:
        self.proved.append(candidate.source)
        candidate.report = self.reports[candidate.source]
        candidate.broken = self.broken.get(candidate.source)
        candidate.gaming = self.gaming.get(candidate.source, [])


def pool_of(reports: Mapping[str, ContractReport | None], **kw: object) -> tuple[Pool, Prover]:
    prover = Prover(reports)
    return Pool(prove=prover, **kw), prover  # type: ignore[arg-type]


def test_on_a_tie_the_earliest_candidate_is_kept_and_the_pool_says_so() -> None:
    pool, _ = pool_of({"a": TASK_ONLY, "b": report(P, P, F, F), "c": ONE_TASK})
    first = pool.offer("a", origin="draft")
    pool.offer("b", origin="witness")
    pool.offer("c", origin="witness")
    assert pool.rank_of(pool.candidates[0]) == pool.rank_of(pool.candidates[1])
    assert pool.best is first
    assert pool.why() == (
        "candidate 0 (draft): none met every check; it ranks highest (the task's checks 2, "
        "all 2, own tests 0; the earliest among equals)"
    )


def test_among_candidates_that_pass_the_first_is_kept() -> None:
    pool, _ = pool_of({"a": NONE, "b": ALL, "c": ALL})
    pool.offer("a", origin="plain")
    passing = pool.offer("b", origin="draft")
    pool.offer("c", origin="witness")
    assert pool.best is passing and pool.met
    assert pool.why() == "candidate 1 (draft): it meets every check (the earliest among equals)"


def test_code_meeting_every_check_it_could_run_is_kept_over_an_earlier_equal() -> None:
    # The same count of checks passed; the later one failed none (the last could not run).
    pool, _ = pool_of({"a": report(P, P, P, F), "b": report(P, P, P, "invalid")})
    a, b = pool.offer("a", origin="draft"), pool.offer("b", origin="witness")
    assert pool.rank_of(a) == pool.rank_of(b)
    assert pool.best is b and pool.met


@pytest.mark.parametrize("later", [ONE_TASK, MODEL_ONLY, NONE, report(P, P, F, F)])
def test_the_plain_answer_is_never_replaced_by_code_that_executes_no_better(
    later: ContractReport,
) -> None:
    pool, _ = pool_of({"plain": TASK_ONLY, "draft": later, "earlier": later})
    plain = pool.offer("plain", origin="plain", temperature=0.0)
    pool.offer("draft", origin="draft", temperature=0.4)
    pool.offer("earlier", origin="earlier", informed=True)
    assert pool.best is plain


@pytest.mark.parametrize("incumbent", ["plain", "earlier"])
@pytest.mark.parametrize("tie", [TASK_ONLY, ALL])
def test_code_the_step_already_had_wins_a_tie_with_new_code_offered_before_it(
    incumbent: str, tie: ContractReport
) -> None:
    # A retry writes its drafts first and offers the step's best so far last: the new code
    # replaces it only by executing strictly better, not by having been offered earlier.
    pool, _ = pool_of({"draft": tie, "witness": tie, "had": tie})
    pool.offer("draft", origin="draft", temperature=0.4)
    pool.offer("witness", origin="witness", temperature=0.8)
    had = pool.offer("had", origin=incumbent, informed=True)
    assert pool.best is had
    assert pool.why().startswith(f"candidate 2 ({incumbent}): ")
    assert pool.why().endswith("the code the step had wins ties)")


def test_new_code_that_executes_better_replaces_the_code_the_step_had() -> None:
    pool, _ = pool_of({"draft": ALL, "had": TASK_ONLY})
    draft = pool.offer("draft", origin="draft")
    pool.offer("had", origin="earlier", informed=True)
    assert pool.best is draft and pool.met


def test_the_plain_answer_is_replaced_by_code_that_passes_more_of_the_tasks_checks() -> None:
    # One check the task states outranks any number of the planner model's.
    pool, _ = pool_of({"plain": MODEL_ONLY, "draft": ONE_TASK})
    pool.offer("plain", origin="plain")
    better = pool.offer("draft", origin="draft")
    assert pool.best is better and not pool.met


REPORTS = [ALL, TASK_ONLY, MODEL_ONLY, ONE_TASK, NONE, report(P, F, P, F)]


@pytest.mark.parametrize("order", list(itertools.permutations(range(6), 3)))
def test_a_worse_candidate_never_replaces_a_better_one(order: tuple[int, ...]) -> None:
    codes = {f"code{i}": REPORTS[i] for i in order}
    pool, _ = pool_of(codes)
    kept: list[Candidate] = []
    for code in codes:
        pool.offer(code, origin="draft")
        best = pool.best
        assert best is not None
        if kept and best is not kept[-1]:
            # The kept one changes only to code that passes, or that ranks strictly higher.
            assert pool.passes(best) or pool.rank_of(best) > pool.rank_of(kept[-1])
        assert all(pool.rank_of(best) >= pool.rank_of(c) for c in pool.candidates)
        kept.append(best)


def test_code_that_breaks_the_projects_tests_ranks_below_code_that_breaks_none() -> None:
    prover = Prover({"breaks": ALL, "keeps": TASK_ONLY}, broken={"breaks": 2, "keeps": 0})
    pool = Pool(prove=prover)
    breaks = pool.offer("breaks", origin="project_edit")
    keeps = pool.offer("keeps", origin="project_edit")
    assert not pool.passes(breaks)
    assert pool.rank_of(keeps) > pool.rank_of(breaks)
    assert pool.best is keeps


def test_without_checks_the_first_code_that_breaks_no_test_passes() -> None:
    prover = Prover({"a": None, "b": None, "c": None}, broken={"a": 1, "b": 0, "c": 0})
    pool = Pool(prove=prover)
    for code in "abc":
        pool.offer(code, origin="project_edit")
    assert [pool.passes(c) for c in pool.candidates] == [False, True, True]
    assert pool.best is pool.candidates[1]


def test_gaming_code_never_passes_and_ranks_below_honest_code() -> None:
    prover = Prover({"table": ALL, "honest": NONE}, gaming={"table": ["impl.py:1: a table"]})
    pool = Pool(prove=prover)
    table = pool.offer("table", origin="draft")
    honest = pool.offer("honest", origin="witness")
    assert not pool.passes(table)
    assert pool.best is honest


def test_suspect_checks_count_for_nothing_until_some_candidate_passes_one() -> None:
    pool, _ = pool_of({"a": report(P, P, F, F), "b": report(F, F, F, P)})
    a = pool.offer("a", origin="draft")
    pool.suspect = {2: "every witness gives 3", 3: "every witness gives 4"}
    assert pool.passes(a) and pool.best is a
    pool.offer("b", origin="earlier", informed=True)  # it passes check 3: not suspect now
    assert pool.suspect == {2: "every witness gives 3"}
    assert not pool.passes(a)


def test_each_sources_yield_is_counted() -> None:
    pool, prover = pool_of({"p": NONE, "d": ONE_TASK, "w": ALL, "e": TASK_ONLY})
    pool.offer("p", origin="plain")
    pool.offer("", origin="draft", note="no code in the reply")
    pool.offer("d", origin="draft")
    pool.offer("w", origin="witness")
    pool.offer("", origin="witness")
    pool.offer("e", origin="earlier", informed=True)
    assert pool.yields() == {
        "plain": Yield(drawn=1, code=1, met=0, kept=0),
        "draft": Yield(drawn=2, code=1, met=0, kept=0),
        "witness": Yield(drawn=2, code=1, met=1, kept=1),
        "earlier": Yield(drawn=1, code=1, met=0, kept=0),
    }
    assert list(pool.yields()) == ["plain", "draft", "witness", "earlier"]
    assert prover.proved == ["p", "d", "w", "e"]  # an offer without code is never proved


def test_a_pool_of_distinct_code_proves_a_repeat_once() -> None:
    pool, prover = pool_of({"a": NONE}, distinct=True)
    pool.offer("a", origin="earlier", informed=True)
    repeat = pool.offer("a", origin="project_edit", temperature=0.0)
    assert (repeat.source, repeat.same_as, repeat.note) == (
        "",
        0,
        "the same code as an earlier candidate",
    )
    assert prover.proved == ["a"] and not pool.passes(repeat)
    assert pool.yields()["project_edit"] == Yield(drawn=1, code=0, met=0, kept=0)


def test_by_default_repeated_code_is_proved_again() -> None:
    # Drafts keep repeats: a witness that gives the draft's code again still testifies.
    pool, prover = pool_of({"a": NONE})
    pool.offer("a", origin="draft")
    again = pool.offer("a", origin="witness")
    assert again.same_as is None and prover.proved == ["a", "a"]


def test_an_empty_pool_keeps_nothing_and_says_why() -> None:
    pool = Pool()
    pool.offer("", origin="draft", note="no code")
    assert pool.best is None and not pool.met
    assert pool.why() == "no candidate: no offer had code"


def test_code_offered_to_a_pool_that_cannot_prove_it_is_a_programming_error() -> None:
    with pytest.raises(RuntimeError, match="no way to be proved"):
        Pool().offer("def f(): ...", origin="draft")
