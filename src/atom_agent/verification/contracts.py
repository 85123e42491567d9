"""The planner's second job: a contract for every step, before any code is written.

The planner model is asked, per step with a name that no runnable value check uses, for a short
list of tests as JSON: each one line of pytest (``assert f(x) == y``, ``with pytest.raises(E):
f(x)``, a class's scenario joined by ``;``: the format a small model writes best), tied to the
task's clause it covers where the task states the step's behaviour in prose
(:func:`skeleton_clauses`). The list's schema bounds it (how many tests, how long each), so
the reply ends where the list does: under a grammar on the embedded model, as
``response_format`` on an OpenAI-compatible server, as the model's structured output elsewhere
(:func:`~atom_agent.models.structured.invoke_sized`); its ``max_tokens`` is sized to what the
schema admits, and a reply cut short anyway keeps its complete tests. Code reads the tests back
into checks (:mod:`atom_agent.checks.asserts`) and validates them against what the step
defines. A model that answers in text instead (a fenced block of asserts, or the test file) is
read as before. The call that writes the contract never sees code, and the call that writes
code never sees the contract until a check fails: the two stay independent.
"""

from __future__ import annotations

import ast
import logging
import math
import re
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.checks.asserts import checks_from_tests
from atom_agent.checks.contract import SHAPE_CRITERIA, check_problems
from atom_agent.checks.exercised import referenced_names
from atom_agent.models.concurrent import at_once
from atom_agent.models.purpose import calling, for_attempt
from atom_agent.models.stopping import code_replies
from atom_agent.models.structured import complete_items, invoke_sized
from atom_agent.names import named_in_text
from atom_agent.prompts import prompt_text, register
from atom_agent.replies import extract_code
from atom_agent.state import Check, Clause, Plan, PlanStep
from atom_agent.telemetry import emit
from atom_agent.verification.clauses import (
    CODE_CRITERIA,
    placed,
    rule_clauses,
    states_behaviour,
)

logger = logging.getLogger(__name__)

CONTRACT_TASK = register(
    "CONTRACT_TASK",
    """\
{task}
{step}
Before any code exists, write the tests for {names}: {fewest} to {most} tests, each one line of \
Python with concrete inputs and the exact expected result, worked out carefully from the task: \
`assert <call> == <result>`, or `with pytest.raises(<Error>): <call>` for an error it must \
raise.{cover}{scenario}
Reply with the tests as JSON.""",
)

CONTRACT_CASES = register(
    "CONTRACT_CASES",
    " Cover the normal case, edge cases, and the errors it must raise.",
)

CONTRACT_CLAUSES = register(
    "CONTRACT_CLAUSES",
    """
Cover each statement of the task below with one or two tests, the statement's id as the \
test's `clause`:
{clauses}""",
)

CONTRACT_SCENARIO = register(
    "CONTRACT_SCENARIO",
    """ For a class, each test is a short scenario on one object, its \
statements on the one line separated by `;`: create it, call its methods in order, and assert \
what the last call returns or raises.""",
)

CONTRACT_STEP = register(
    "CONTRACT_STEP",
    """
The tests are for one step of a larger plan: {title}
{description}
""",
)

CONTRACT_TEMPERATURE = 0.0

TEST_CHARS = 200
"""Longest test line of a contract reply (the schema's ``maxLength``): a class's scenario of
a few calls fits; a test that does not is not one a reader checks at a glance."""
FEWEST_TESTS = 4
MOST_TESTS = 8
"""Tests one contract reply may hold: two per clause it covers, within these."""
CHARS_PER_TOKEN = 2.0
"""Characters per token of a test line, counted low (digits and brackets are a token each)."""
ITEM_TOKENS = 16
"""Tokens of one test's JSON around its line (``{"clause": "c12", "test": "…"}, ``)."""
REPLY_TOKENS = 32
"""Tokens of the reply's JSON around its tests (on the embedded model, the call's wrapper)."""
CONTRACT_SCHEMA_NAME = "Tests"


def contract_size(plan: Plan, step: PlanStep) -> int:
    """How many tests `step`'s contract may hold.

    Two per clause it gives a test each (:func:`skeleton_clauses`), within the bounds; else
    six (its normal and edge cases and its errors).
    """
    clauses = len(skeleton_clauses(plan, step))
    return min(MOST_TESTS, max(FEWEST_TESTS, 2 * clauses)) if clauses else MOST_TESTS - 2


def contract_schema(clause_ids: list[str], most: int) -> dict[str, Any]:
    """The JSON schema of a contract reply: at most `most` one-line tests.

    Each is tied to one of `clause_ids` when there are any; every string is bounded, so the
    reply's length is.
    """
    item: dict[str, Any] = {
        "type": "object",
        "properties": {
            "test": {"type": "string", "minLength": 1, "maxLength": TEST_CHARS},
        },
        "required": ["test"],
    }
    if clause_ids:  # the clause first: the test is written knowing what it covers
        item["properties"] = {"clause": {"enum": clause_ids}, **item["properties"]}
        item["required"] = ["clause", "test"]
    return {
        "type": "object",
        "properties": {
            "tests": {"type": "array", "items": item, "minItems": 1, "maxItems": most},
        },
        "required": ["tests"],
    }


def contract_max_tokens(most: int) -> int:
    """``max_tokens`` of a contract reply of at most `most` tests: what its schema admits.

    Every test's line is at most :data:`TEST_CHARS` long, so the reply's structure ends
    before this many tokens, and the call ends where its list does, not on its cap.
    """
    return REPLY_TOKENS + most * (math.ceil(TEST_CHARS / CHARS_PER_TOKEN) + ITEM_TOKENS)


def write_contracts(
    model: BaseChatModel,
    task: str,
    plan: Plan,
    *,
    skip: set[str] | None = None,
    parallel: int = 1,
) -> tuple[Plan, list[AIMessage]]:
    """`plan` with a contract for each step with a name no runnable value check uses.

    (:func:`unchecked`; steps in `skip` are left as they are.) Returns the plan and the model's
    replies (for usage). A reply without usable tests leaves its step with the checks it had
    (none: the step then relies on its tests). The steps' contract calls do not depend on each
    other: up to `parallel` of them are made at once (a model that answers calls side by side).
    """
    wanted: dict[str, str] = {}
    missing_of: dict[str, list[str]] = {}
    available: list[str] = []
    for step in plan.steps:
        runnable = [
            c
            for c in step.checks
            if not check_problems(c, defines=step.defines, available=available)
        ]
        missing = unchecked(step.defines, runnable)
        available += step.defines
        if not wants_contract(plan, step, missing) or step.id in (skip or set()):
            continue
        # The model's checks prove the step's one prose criterion (the others are code's).
        prose = [c for c in step.acceptance_criteria if c not in CODE_CRITERIA]
        wanted[step.id], missing_of[step.id] = (prose[0] if len(prose) == 1 else ""), missing
    by_id = {s.id: s for s in plan.steps}
    answers = at_once(
        {sid: partial(ask_contract, model, task, plan, by_id[sid], criterion=criterion)
         for sid, criterion in wanted.items()},
        parallel,
    )  # fmt: skip
    spent: list[AIMessage] = []
    steps: list[PlanStep] = []
    available = []
    for step in plan.steps:
        if step.id in answers:
            reply, found = answers[step.id]
            if reply is not None:
                spent.append(reply)
            step = _with_contract(task, plan, step, found, missing_of[step.id], available)
        steps.append(step)
        available += step.defines
    return Plan(steps=steps, rationale=plan.rationale, clauses=plan.clauses), spent


def _with_contract(
    task: str,
    plan: Plan,
    step: PlanStep,
    found: list[Check],
    missing: list[str],
    available: list[str],
) -> PlanStep:
    """`step` with the usable checks of its contract reply added."""
    have = {c.describe() for c in step.checks}
    rules = rule_clauses(task, plan.clauses)
    usable = [
        placed(c, task, plan.clauses, rules)
        for c in found
        if c.describe() not in have
        and not check_problems(c, defines=step.defines, available=available)
    ]
    emit("plan.contract", step_id=step.id, unchecked=missing, asserts=len(found),
         usable=len(usable))  # fmt: skip
    kept = (
        per_clause(usable)
        if skeleton_clauses(plan, step)
        else capped(usable, missing or list(step.defines))
    )
    return step.model_copy(update={"checks": [*step.checks, *kept]})


def ask_contract(
    model: BaseChatModel, task: str, plan: Plan, step: PlanStep, *, criterion: str = ""
) -> tuple[AIMessage | None, list[Check]]:
    """One contract call for `step`: the model's reply and the checks its tests state.

    The reply is a list of tests bounded by :func:`contract_schema` and sized by
    :func:`contract_max_tokens`; one cut short keeps its complete tests
    (:func:`~atom_agent.models.structured.complete_items`). A reply in text (a model that
    wrote a fenced block instead) is read as asserts, tied to clauses by test name.
    """
    offered = covered_clauses(plan, step)
    most = contract_size(plan, step)
    ids = [c.id for c in offered]
    # A model that answers in text anyway (a fenced block) is ended where its block does.
    # The step's call, before any attempt at it.
    with calling("contract"), for_attempt(step.id, 0), code_replies("tests", ()):
        reply = invoke_sized(
            model,
            CONTRACT_SCHEMA_NAME,
            contract_schema(ids, most),
            [HumanMessage(contract_prompt(task, plan, step))],
            max_tokens=contract_max_tokens(most),
            description="the tests, each one line of pytest",
        )
    items = (reply.data or {}).get("tests") if reply.data is not None else None
    if not isinstance(items, list):
        items = complete_items(reply.text, "tests")
    if items or reply.data is not None:
        return reply.raw, tests_as_checks(items[:most], ids, criterion=criterion)
    # No JSON at all: a model that answered in its own format (a fenced block of tests).
    source = extract_code(reply.text, tests=True)
    found = checks_from_tests(source, criterion=criterion)
    by_clause = clause_tests(source, [c.id for c in plan.clauses], criterion=criterion)
    found = [c.model_copy(update={"clause": by_clause.get(c.describe(), "")}) for c in found]
    return reply.raw, found


def tests_as_checks(items: list[Any], clause_ids: list[str], *, criterion: str = "") -> list[Check]:
    """The checks a contract reply's tests state, each tied to its clause when it names one.

    Each test is one line of pytest, read as the body of a test function (so a scenario's
    statements before its assert are its setup); a line that does not parse states nothing.
    """
    found: dict[str, Check] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("test"), str):
            continue
        clause = str(item.get("clause") or "")
        body = item["test"].strip()
        for check in checks_from_tests(f"def test_it():\n    {body}\n", criterion=criterion):
            tied = check.model_copy(update={"clause": clause if clause in clause_ids else ""})
            found.setdefault(tied.describe(), tied)
    return list(found.values())


MAX_CHECKS = 10
"""Checks kept from one contract reply."""
MAX_CHECKS_PER_NAME = 5
"""Checks kept per name the contract was asked for: one name cannot spend the whole cap."""


def capped(checks: list[Check], names: list[str]) -> list[Check]:
    """At most MAX_CHECKS_PER_NAME checks per name in `names`, MAX_CHECKS in all, in order."""
    per: dict[str, int] = {}
    kept: list[Check] = []
    for check in checks:
        used = [n for n in names if n in referenced_names(check.call)] or [""]
        if all(per.get(n, 0) >= MAX_CHECKS_PER_NAME for n in used):
            continue
        for n in used:
            per[n] = per.get(n, 0) + 1
        kept.append(check)
    return kept[:MAX_CHECKS]


def unchecked(defines: list[str], runnable: list[Check]) -> list[str]:
    """The names in `defines` that no runnable value check uses.

    An error check (``raises``) shows that bad input is refused, not what the name computes:
    a step whose checks are all error cases, or that never call one of its names, gets a
    contract too (the task's own checks stay; the contract's are added beside them).
    """
    used: set[str] = set()
    for check in runnable:
        if not check.raises and check.criterion not in SHAPE_CRITERIA:
            used |= referenced_names(check.call)
    return [name for name in defines if name not in used]


_QUOTED_RESULT = re.compile(
    r"""(?:\b(?:returns?|gives?|yields?|renders?|prints?|evaluates to|becomes)\s+"""
    r"""|->\s*|==\s*)[\[\('"\d-]"""
)


def quotes_a_result(text: str) -> bool:
    """Whether a clause states a concrete result (``render() returns 'a | b'``, ``-> [1, 2]``)."""
    return bool(_QUOTED_RESULT.search(text))


def open_clauses(plan: Plan, step: PlanStep) -> list[Clause]:
    """The task's clauses no check covers yet that belong to `step`, stated results first.

    A clause belongs to the step when it names something the step defines; with one step,
    every clause does. A signature check covers no clause here: "gaps(start, end) returns the
    longest stretches …" states what it computes, and inspect does not check that.
    Clauses quoting a concrete result (a worked example in prose) come first: a test can
    restate them word for word.
    """
    covered = {
        c.clause
        for s in plan.steps
        for c in s.checks
        if c.clause and c.criterion not in SHAPE_CRITERIA
    }
    found = [
        c
        for c in plan.clauses
        if c.id not in covered
        and (len(plan.steps) == 1 or set(named_in_text(c.text)) & set(step.defines))
    ]
    return sorted(found, key=lambda c: not quotes_a_result(c.text))


def wants_contract(plan: Plan, step: PlanStep, missing: list[str]) -> bool:
    """Whether the planner model is asked for `step`'s tests.

    When a name it defines has no value check (`missing`); when it defines a class and a
    clause about it has no check (a class's behaviour lives in prose: state across calls,
    ordering rules, edge cases; ClassEval); when an unchecked clause quotes a result; and
    when the task writes a function of the step out in prose and a clause stating what it
    does has no check (:func:`skeleton_clauses`): one worked example of ``initials`` does not
    check that it collapses runs of punctuation or strips hyphens.
    """
    if missing:
        return True
    opened = open_clauses(plan, step)
    classes = any(_is_class(name) for name in step.defines)
    if any(classes or quotes_a_result(c.text) for c in opened):
        return True
    return bool(skeleton_clauses(plan, step))


def _is_class(name: str) -> bool:
    return name[:1].isupper() and not name.endswith(("Error", "Exception", "Warning"))


def contract_prompt(task: str, plan: Plan, step: PlanStep) -> str:
    """The contract request of one step: the task, the step, what it defines, what to cover.

    The clauses it covers (:func:`covered_clauses`) are listed with their ids, for each test
    to name the one it checks; a step without any is asked for its normal and edge cases
    and its errors.
    """
    scope = (
        ""
        if len(plan.steps) == 1
        else prompt_text("CONTRACT_STEP").format(
            title=step.title, description=step.description.strip()
        )
    )
    offered = covered_clauses(plan, step)
    cover = (
        prompt_text("CONTRACT_CLAUSES").format(
            clauses="\n".join(f"- {c.id}: {' '.join(c.text.split())[:300]}" for c in offered)
        )
        if offered
        else prompt_text("CONTRACT_CASES")
    )
    classes = [n for n in step.defines if _is_class(n)]
    most = contract_size(plan, step)
    return prompt_text("CONTRACT_TASK").format(
        task=task.strip(),
        step=scope,
        names=", ".join(classes or step.defines),
        fewest=min(FEWEST_TESTS, most),
        most=most,
        cover=cover,
        scenario=prompt_text("CONTRACT_SCENARIO") if classes else "",
    )


def covered_clauses(plan: Plan, step: PlanStep) -> list[Clause]:
    """The clauses a step's contract covers, each named by the tests that check it.

    Those a test file would give a test each (:func:`skeleton_clauses`), else the open ones,
    results first.
    """
    return skeleton_clauses(plan, step) or open_clauses(plan, step)[:MAX_SKELETON_TESTS]


MAX_SKELETON_TESTS = 8
"""Clauses given a test to complete in one contract request."""
MAX_CHECKS_PER_CLAUSE = 2
"""Checks kept per clause from a completed test file (round robin over the clauses)."""


def skeleton_clauses(plan: Plan, step: PlanStep) -> list[Clause]:
    """The clauses a step's contract gives a test each: its open ones, results first.

    For a class step, every open clause. For functions, the open clauses that state behaviour,
    when the task writes a signature of the step's out in prose (``initials(name: str,
    sep: str = '') -> str that takes …``): a task given as code (HumanEval's
    prompt, a signature with a docstring) has its statements in the code, and its contract is
    asked for as asserts.
    """
    if any(_is_class(name) for name in step.defines):
        return open_clauses(plan, step)[:MAX_SKELETON_TESTS]
    if not any(
        clause.kind == "signature" and set(named_in_text(clause.text)) & set(step.defines)
        for clause in plan.clauses
    ):
        return []
    stating = [c for c in open_clauses(plan, step) if states_behaviour(c.text)]
    return stating[:MAX_SKELETON_TESTS]


def clause_tests(source: str, ids: list[str], *, criterion: str = "") -> dict[str, str]:
    """``describe()`` of each check in a test named after a clause (``test_c5``) → its clause."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            clause = node.name.removeprefix("test_")
            if clause in ids:
                for check in checks_from_tests(ast.unparse(node), criterion=criterion):
                    found.setdefault(check.describe(), clause)
    return found


def per_clause(checks: list[Check]) -> list[Check]:
    """Up to MAX_CHECKS checks, at most MAX_CHECKS_PER_CLAUSE per clause, one clause at a time.

    Round robin in the clauses' order: each statement's first asserts are kept before any
    statement's third, so one long test cannot fill the contract. Checks no clause claims
    fill what is left, in order.
    """
    queues: dict[str, list[Check]] = {}
    for check in checks:
        queues.setdefault(check.clause, []).append(check)
    loose = queues.pop("", [])
    kept: list[Check] = []
    for _ in range(MAX_CHECKS_PER_CLAUSE):
        for queue in queues.values():
            if queue and len(kept) < MAX_CHECKS:
                kept.append(queue.pop(0))
    return kept + loose[: max(0, MAX_CHECKS - len(kept))]
