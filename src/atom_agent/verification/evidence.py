"""The evidence of a verdict: each criterion's status, and the feedback the next attempt gets.

A criterion is *verified* only by a check that ran in the sandbox and held; a criterion nothing
executed backs is *unverified* (no model's opinion stands in for a check). The feedback lists the
executed evidence (which check, what the code gave), then the criteria nothing checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from atom_agent.checks.contract import ContractReport
from atom_agent.names import free_names
from atom_agent.sandbox import RunResult
from atom_agent.state import Check, Plan, PlanStep

from .crossexam import Testimony

_REJECTED = ("failed", "error", "timeout")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


UNSTATED = "further checks of the contract"
"""The criterion shown for checks that name none."""


def _checks_of(step: PlanStep, criterion: str) -> list[int]:
    """Indexes of the checks that back `criterion` (matched by its text)."""
    wanted = _norm(criterion)
    if criterion == UNSTATED:
        return [i for i, c in enumerate(step.checks) if not c.criterion.strip()]
    return [
        i
        for i, c in enumerate(step.checks)
        if c.criterion.strip() and (_norm(c.criterion) == wanted or _norm(c.criterion) in wanted)
    ]


def _all_criteria(step: PlanStep) -> list[str]:
    """The step's criteria, then those only checks state, then checks that state none."""
    extra = [
        c.criterion
        for c in step.checks
        if c.criterion.strip() and not any(_checks_of_text(c.criterion, step))
    ]
    unstated = [UNSTATED] if any(not c.criterion.strip() for c in step.checks) else []
    return [*step.acceptance_criteria, *dict.fromkeys(extra), *unstated]


def _checks_of_text(criterion: str, step: PlanStep) -> list[str]:
    wanted = _norm(criterion)
    return [c for c in step.acceptance_criteria if _norm(c) == wanted or wanted in _norm(c)]


def criteria_verdicts(
    step: PlanStep,
    contract: ContractReport | None,
    suspect: set[int],
) -> list[dict[str, Any]]:
    """Each criterion's status, with its evidence.

    *verified*: a check ran and held; *failed*: a check ran and did not; *suspect*: its only
    checks were contradicted by independent code; *unverified*: nothing executed backs it.
    """
    verdicts: list[dict[str, Any]] = []
    for criterion in _all_criteria(step):
        indexes = _checks_of(step, criterion)
        pairs = [(i, contract.results[i]) for i in indexes] if contract is not None else []
        results = [r for _, r in pairs]
        trusted = [(i, r) for i, r in pairs if i not in suspect]
        ran = [r for _, r in trusted if r.executed]
        evidence = [
            f"{r.check.describe()[:160]} → {r.status}"
            + (f" ({r.reason[:160]})" if r.reason else "")
            for r in results
        ]
        if ran and all(r.status == "passed" for r in ran):
            status = "verified"
        elif ran:
            status = "failed"
        elif results and all(i in suspect for i, _ in pairs):
            status = "suspect"
        else:
            status = "unverified"
        verdicts.append({"criterion": criterion, "status": status, "evidence": evidence})
    return verdicts


def feedback_of(
    missing: list[str],
    result: RunResult | None,
    contract: ContractReport | None,
    testimony: Testimony,
    checks: list[Check],
    tests_ok: bool,
    criteria: list[dict[str, Any]],
    *,
    outranked: Mapping[int, str] | None = None,
    gaming: Sequence[str] = (),
) -> str:
    """What the next attempt is told: the executed evidence, then the criteria nothing checked.

    A failing test the drafts wrote is shown as such (the next attempt sees it); one a check
    the task states contradicts (`outranked`: index → that check) is shown set aside, and
    each gaming finding as what to compute instead.
    """
    parts: list[str] = []
    if missing:
        parts.append(f"missing files: {', '.join(missing)} (write both impl.py and test.py)")
    parts += [f"answers the checks instead of computing, do not: {g[:200]}" for g in gaming]
    outranked = outranked or {}
    suspect = set(testimony.suspect_checks) | set(outranked)
    if contract is not None:
        if contract.error:
            parts.append(f"the checks could not run normally: {contract.error}")
        for i, r in enumerate(contract.results):
            if i in suspect or r.status == "passed":
                continue
            what = "your own test" if r.check.origin == "own" else "check"
            if r.status == "invalid":
                parts.append(f"{what} cannot run: {r.check.describe()[:200]} ({r.reason[:200]})")
            elif r.status != "not_run":
                parts.append(
                    f"{what} failed: {r.check.describe()[:200]}: {(r.reason or r.got)[:200]}"
                )
        for i, by in outranked.items():
            if i < len(contract.results) and contract.results[i].status in _REJECTED:
                parts.append(
                    f"your own test set aside: {checks[i].describe()[:200]} contradicts the "
                    f"task's {by[:200]}"
                )
        for i in testimony.suspect_checks:
            parts.append(
                f"check suspect (not used): {checks[i].describe()[:200]}: "
                f"{testimony.reasons.get(i, '')}"
            )
    if result is not None and not tests_ok:
        parts.append(f"tests did not pass: {tests_evidence(result)['summary']}")
        parts.append(f"first failure: {first_failure(result)}")
    for c in criteria:
        if c["status"] == "unverified":
            parts.append(f"criterion not verified (no check ran): {c['criterion']}")
    return "\n".join(parts)


_OUTPUT_TAIL = 2500


def implicated_dependencies(
    plan: Plan, step: PlanStep, contract: ContractReport | None, suspect: set[int]
) -> dict[str, str]:
    """Committed dependencies whose code the step's failing checks point at (id → why).

    A check that fails inside a dependency (its error names a class or function the dependency
    defines, or its ``deps.<step>`` module) or that calls only what a dependency defines shows
    the dependency is wrong or incomplete, not this step: a replan may reopen it.
    """
    if contract is None:
        return {}
    found: dict[str, str] = {}
    owners = {s.id: s for s in plan.steps if s.id in step.depends_on}
    for i, result in enumerate(contract.results):
        if i in suspect or result.status not in ("failed", "error", "timeout"):
            continue
        used = set(free_names(result.check.call))
        said = f"{result.reason} {result.got}"
        for dep_id, dep in owners.items():
            named = [n for n in dep.defines if re.search(rf"\b{re.escape(n)}\b", said)]
            only_dep = bool(used & set(dep.defines)) and not used & set(step.defines)
            if named or f"deps.{dep_id.replace('-', '_')}" in said or only_dep:
                found.setdefault(
                    dep_id,
                    f"{result.check.describe()[:160]}: {(result.reason or result.got)[:200]}",
                )
    return found


def tests_evidence(result: RunResult | None) -> dict[str, Any]:
    """What a pytest run showed, for verdict.json (``ran``, ``summary``, counts, output tail)."""
    if result is None:
        return {"ran": False, "summary": "not run: impl.py or test.py is missing"}
    counts = result.tests
    summary = (
        f"{counts.passed} passed, {counts.failed} failed, {counts.errors} errors"
        if counts is not None
        else result.report_error or "no test counts"
    )
    if result.timed_out:
        summary += f"; killed at the {result.limit_hit} limit"
    elif result.exit_code not in (0, None) and counts is not None and counts.total == 0:
        summary += f"; pytest exited {result.exit_code} (nothing collected?)"
    return {
        "ran": True,
        "summary": summary,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_s": round(result.duration_s, 3),
        "counts": None if counts is None else {**counts.__dict__, "total": counts.total},
        "output_tail": result.output[-_OUTPUT_TAIL:],
    }


def first_failure(result: RunResult) -> str:
    """The first failing line of a pytest run's output."""
    for line in result.output.splitlines():
        if line.startswith(("FAILED", "ERROR", "E ")):
            return line.strip()[:300]
    return "see the test output"


def failure_lesson(
    step: PlanStep,
    contract: ContractReport | None,
    suspect: set[int],
    result: RunResult | None,
    tests_ok: bool,
) -> str:
    """Why an attempt was rejected, from executed evidence only ('' when none ran).

    Names the failing checks with what the code gave, or the first failing test; not what a
    model merely judged.
    """
    parts: list[str] = []
    if contract is not None:
        for i, r in enumerate(contract.results):
            if i in suspect or r.status not in _REJECTED:
                continue
            parts.append(f"check `{r.check.describe()[:160]}` {(r.reason or r.got)[:160]}")
            if len(parts) == 3:
                break
    tests = result.tests if result is not None else None
    # The tests' first failure only where no failed check says more precisely what went wrong
    # (the same check failing through another test file is the same lesson).
    failing = tests is not None and not tests_ok
    if failing and not parts and (tests.failed or tests.errors):  # type: ignore[union-attr]
        failure = " ".join(first_failure(result).split())  # type: ignore[arg-type]
        parts.append(f"its tests failed: {failure[:200]}")
    if not parts:
        return ""
    defines = f" ({', '.join(step.defines)})" if step.defines else ""
    return f"In '{step.title[:80]}'{defines}, code was rejected: " + "; ".join(parts)
