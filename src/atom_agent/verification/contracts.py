"""The planner's second job: a contract for every step, before any code is written.

The planner model is asked, per step with a name that no runnable value check uses, for pytest
asserts in a fenced block (the format a small model writes best, and cheap: no JSON schema to
fill) or, where the task states the step's behaviour in prose, for a test file to complete with
one empty test per open clause (:func:`skeleton_clauses`); code reads them back into checks
(:mod:`atom_agent.checks.asserts`) and validates them against what the step defines. The call
that writes the contract never sees code, and the call that writes code never sees the contract
until a check fails: the two stay independent.
"""

from __future__ import annotations

import ast
import logging
import re

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from atom_agent.checks.asserts import checks_from_tests
from atom_agent.checks.contract import SHAPE_CRITERIA, check_problems
from atom_agent.checks.exercised import referenced_names
from atom_agent.models.purpose import for_attempt
from atom_agent.models.sampling import sample
from atom_agent.names import named_in_text
from atom_agent.prompts import prompt_text, register
from atom_agent.replies import extract_code
from atom_agent.state import Check, Clause, Plan, PlanStep
from atom_agent.telemetry import emit
from atom_agent.verification.clauses import CODE_CRITERIA, placed, states_behaviour

logger = logging.getLogger(__name__)

CONTRACT_TASK = register(
    "CONTRACT_TASK",
    """\
{task}
{step}{clauses}
Before any code exists, write the tests for {names}: 4 to 8 pytest `assert` lines with concrete \
inputs and the exact expected results, worked out carefully from the task. Cover the normal \
case, edge cases, and the errors it must raise (`with pytest.raises(...)`).{scenario} Reply with \
one ```python block, nothing else.""",
)

CONTRACT_SKELETON = register(
    "CONTRACT_SKELETON",
    """\
{task}
{step}
Before any code exists, complete these tests of {names}. Each test checks the one statement of \
the task in its docstring: {how}, and assert the exact result each call returns \
(`with pytest.raises(...)` where the statement says it raises), worked out carefully from the \
task. Write only the tests, not {names} itself. Reply with the whole test file in one ```python \
block, nothing else.

```python
{skeleton}
```""",
)
"""A contract's test per open clause to complete, the clause as its docstring.

Asked for "the tests" of a long class description, a small model writes the class instead
(session 17: five of six replies; session 20: a class again, and the functions
again for three function tasks); a test file to complete, one function per statement
(HumanEval's shape: a docstring to write a body for), is what it completes."""

SKELETON_CLASS = register(
    "SKELETON_CLASS", "create the object, call its methods in order with concrete arguments"
)
SKELETON_FUNCTIONS = register("SKELETON_FUNCTIONS", "call {names} with concrete arguments")
"""How a skeleton's tests call the code: scenarios on an object, or calls of functions."""

CONTRACT_CLAUSES = register(
    "CONTRACT_CLAUSES",
    """
Statements of the task no test covers yet (cover each one):
{clauses}
""",
)

CONTRACT_SCENARIO = register(
    "CONTRACT_SCENARIO",
    """ For a class, write each \
test as a short scenario on one object: create it, call its methods in order, and assert what \
each call returns or raises.""",
)

CONTRACT_STEP = register(
    "CONTRACT_STEP",
    """
The tests are for one step of a larger plan: {title}
{description}
""",
)

CONTRACT_TEMPERATURE = 0.0


def write_contracts(
    model: BaseChatModel, task: str, plan: Plan, *, skip: set[str] | None = None
) -> tuple[Plan, list[AIMessage]]:
    """`plan` with a contract for each step with a name no runnable value check uses.

    (:func:`unchecked`; steps in `skip` are left as they are.) Returns the plan and the model's
    replies (for usage). A reply without usable asserts leaves its step with the checks it had
    (none: the step then relies on its tests).
    """
    spent: list[AIMessage] = []
    steps: list[PlanStep] = []
    available: list[str] = []
    for step in plan.steps:
        runnable = [
            c
            for c in step.checks
            if not check_problems(c, defines=step.defines, available=available)
        ]
        missing = unchecked(step.defines, runnable)
        if not wants_contract(plan, step, missing) or step.id in (skip or set()):
            steps.append(step)
            available += step.defines
            continue
        request: list[BaseMessage] = [HumanMessage(contract_prompt(task, plan, step))]
        with for_attempt(step.id, 0):  # the step's, before any attempt at it
            reply = sample(model, request, CONTRACT_TEMPERATURE, purpose="contract",
                           code_only="tests")  # fmt: skip
        spent.append(reply)
        # The model's checks prove the step's one prose criterion (the others are code's).
        prose = [c for c in step.acceptance_criteria if c not in CODE_CRITERIA]
        criterion = prose[0] if len(prose) == 1 else ""
        source = extract_code(reply.text, tests=True)
        found = checks_from_tests(source, criterion=criterion)
        by_clause = clause_tests(source, [c.id for c in plan.clauses], criterion=criterion)
        found = [c.model_copy(update={"clause": by_clause.get(c.describe(), "")}) for c in found]
        have = {c.describe() for c in step.checks}
        usable = [
            placed(c, task, plan.clauses)
            for c in found
            if c.describe() not in have
            and not check_problems(c, defines=step.defines, available=available)
        ]
        emit(
            "plan.contract",
            step_id=step.id,
            unchecked=missing,
            asserts=len(found),
            usable=len(usable),
        )
        kept = (
            per_clause(usable)
            if skeleton_clauses(plan, step)
            else capped(usable, missing or list(step.defines))
        )
        steps.append(step.model_copy(update={"checks": [*step.checks, *kept]}))
        available += step.defines
    return Plan(steps=steps, rationale=plan.rationale, clauses=plan.clauses), spent


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
    """Whether a clause states a concrete result (``show() returns 'a / b'``, ``-> [1, 2]``)."""
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
    check that it skips extra spaces or keeps one letter per word.
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
    """The contract request of one step: the task, the step, and what it defines.

    A class step with clauses no check covers gets a test file to complete, one test per
    clause (:func:`skeleton_clauses`); any other step is asked for asserts.
    """
    scope = (
        ""
        if len(plan.steps) == 1
        else prompt_text("CONTRACT_STEP").format(
            title=step.title, description=step.description.strip()
        )
    )
    skeleton = skeleton_clauses(plan, step)
    if skeleton:
        classes = [n for n in step.defines if _is_class(n)]
        names = ", ".join(classes or step.defines)
        return prompt_text("CONTRACT_SKELETON").format(
            task=task.strip(),
            step=scope,
            names=names,
            how=prompt_text("SKELETON_CLASS")
            if classes
            else prompt_text("SKELETON_FUNCTIONS").format(names=names),
            skeleton=skeleton_file(step.defines, skeleton),
        )
    opened = open_clauses(plan, step)
    clauses = (
        prompt_text("CONTRACT_CLAUSES").format(
            clauses="\n".join(f"- {' '.join(c.text.split())[:200]}" for c in opened[:8])
        )
        if opened
        else ""
    )
    scenario = (
        prompt_text("CONTRACT_SCENARIO") if any(n[:1].isupper() for n in step.defines) else ""
    )
    return prompt_text("CONTRACT_TASK").format(
        task=task.strip(),
        step=scope,
        clauses=clauses,
        names=", ".join(step.defines),
        scenario=scenario,
    )


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


def skeleton_file(defines: list[str], clauses: list[Clause]) -> str:
    """A test file to complete: the step's names imported, one empty test per clause.

    Each test is named after its clause (``test_c5``) and has the clause as its docstring, so
    what the model writes in it is read back as that clause's checks (:func:`clause_tests`).
    """
    lines = ["import pytest", f"from impl import {', '.join(defines)}", ""]
    for clause in clauses:
        text = " ".join(clause.text.split())[:400].replace('"""', "'''").replace("\\", "/")
        lines += ["", f"def test_{clause.id}():", f'    """{text}"""', ""]
    return "\n".join(lines).rstrip() + "\n"


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
