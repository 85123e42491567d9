"""The commit rule of a project step, as a table."""

from __future__ import annotations

import pytest

from atom_agent.nodes.project.reflector import ChangeEvidence, decide_change


def ev(**kw: object) -> ChangeEvidence:
    base = dict(written=True, checks=3, checks_passed=3, regressions=0, collected=True,
                last_attempt=False)  # fmt: skip
    return ChangeEvidence(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("evidence", "action", "verified"),
    [
        (ev(), "commit", True),
        (ev(regressions=1), "retry", False),
        (ev(regressions=1, last_attempt=True), "fail", False),
        (ev(written=False), "retry", False),
        # An edit that leaves the file as the branch has it is no change, checks or none.
        (ev(changed=False, checks=0, checks_passed=0), "retry", False),
        (ev(changed=False, checks=0, checks_passed=0, last_attempt=True), "fail", False),
        (ev(changed=False), "retry", False),
        (ev(collected=False, last_attempt=True), "fail", False),
        (ev(checks=0, checks_passed=0), "commit", False),
        (ev(checks_passed=1), "retry", False),
        (ev(checks_passed=1, last_attempt=True), "commit", False),
        (ev(checks_passed=0, last_attempt=True), "fail", False),
        (ev(checks=0, checks_passed=0, regressions=2, last_attempt=True), "fail", False),
        # The model's reproduction tests steer, and never fail a change the suite accepts.
        (ev(model_checks=3), "commit", True),
        (ev(model_checks=3, checks_passed=0), "retry", False),
        (ev(model_checks=3, checks_passed=0, last_attempt=True), "commit", False),
        (ev(model_checks=2, checks_passed=0, last_attempt=True), "fail", False),
        (ev(model_checks=3, checks_passed=0, regressions=1, last_attempt=True), "fail", False),
    ],
)
def test_decide_change(evidence: ChangeEvidence, action: str, verified: bool) -> None:
    decision = decide_change(evidence)
    assert (decision.action, decision.verified) == (action, verified), decision.reason


def test_the_reasons_say_which_checks_were_the_models() -> None:
    assert "(2 of them the model's reproduction tests)" in decide_change(ev(model_checks=2)).reason
    rejected = decide_change(ev(model_checks=3, checks_passed=0, last_attempt=True))
    assert "the model's 3 reproduction test(s) all fail" in rejected.reason
    assert "(unverified)" in rejected.reason
