"""Reproduction checks a model writes for a project's target before any code (Agentless).

The project's documentation gives a step its checks where it has examples of the target; a
method deep in a class usually has none, and then nothing told one candidate from another. The
planner model is asked, with the task and the code around the unwritten target, for pytest
asserts that use the project the way its users do; code reads them back into checks, each with
the test's imports as its first setup lines. Only those whose run on the unchanged project
fails *inside the target* are kept (:func:`atom_agent.project.checks.reproducing`): a test that
already passes, or fails somewhere else, says nothing about the change.

They are the model's checks (origin ``planner``): a check the project states outranks any
number of them, and they never turn a change the project's suite accepts into a failed step
(:func:`atom_agent.nodes.project.reflector.decide_change`). They steer which candidate is
sampled and chosen, and they tell a retry what failed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from atom_agent.checks.asserts import checks_from_tests
from atom_agent.checks.contract import ContractReport
from atom_agent.project.checks import explain, inside
from atom_agent.prompts import prompt_text, register
from atom_agent.state import Check

PROJECT_CONTRACT = register(
    "PROJECT_CONTRACT",
    """\
{task}

`{qualname}` in `{path}` is not written yet. The code around it (line numbers on the left):
{excerpt}
{origins}
Before it is written, write the tests for it: 4 to 8 pytest `assert` lines that use the \
project the way its users do, with concrete inputs and the exact results the task and the \
docstrings state, worked out carefully. Import what the tests use from the project. Reply with \
one ```python block, nothing else.""",
)
"""The planner's request for reproduction tests of a project step that has no examples."""

PROJECT_CONTRACT_ORIGINS = register(
    "PROJECT_CONTRACT_ORIGINS",
    """
The project's own tests get a `{cls}` like this:
{lines}
""",
)
"""How the project's tests get an object of a method's class (traced in its suite), for the
reproduction request: a test that builds it another way may never reach the method."""

PROJECT_CONTRACT_AGAIN = register(
    "PROJECT_CONTRACT_AGAIN",
    """

Tests written for it earlier never reached `{qualname}`: each stopped before it ran.
{failures}
Its header is `{signature}`.{usages} Write tests that each call `{qualname}` with all it \
needs, built the way the project builds it.""",
)
"""Added to the reproduction request when no test of the first reply reached the target: what
stopped them, and how the project's own tests make the call. The rejected tests are not shown
(a small model shown its previous reply hands it back, session 20)."""

PROJECT_CONTRACT_USAGES = register(
    "PROJECT_CONTRACT_USAGES",
    """ The project's own tests call `{name}` like this:
{lines}
""",
)

MAX_MODEL_CHECKS = 6
"""Reproduction checks kept per target (after the baseline run, shortest first)."""
CRITERION = "the model's reproduction test of the task"


def reproduction_prompt(
    task: str, qualname: str, path: str, around: str, origins: Sequence[str] = ()
) -> str:
    """The request for reproduction tests: the task and the code around the unwritten target.

    `origins`: lines of the project's tests that get an object of a method's class
    (:func:`atom_agent.project.instances.instance_origins`), shown when there are any.
    """
    shown = (
        prompt_text("PROJECT_CONTRACT_ORIGINS").format(
            cls=qualname.rpartition(".")[0], lines="\n".join(origins)
        )
        if origins and "." in qualname
        else ""
    )
    return prompt_text("PROJECT_CONTRACT").format(
        task=task.strip(), qualname=qualname, path=path, excerpt=around, origins=shown
    )


def stopped_before(baseline: ContractReport, qualname: str, limit: int = 4) -> list[str]:
    """Why the tests that raised before reaching `qualname` stopped, one line each, distinct.

    A test that builds the target's object from the wrong arguments, or calls it without a
    required one, raises in the test itself or elsewhere in the project: the model is shown
    what stopped it so that its one rewrite can reach the target.
    """
    lines: list[str] = []
    told: set[tuple[str, str]] = set()
    for result in baseline.results:
        if result.status not in ("error", "timeout") or inside(result.function, qualname):
            continue
        if (result.reason, result.function) not in told:
            told.add((result.reason, result.function))
            lines.append(explain(result))
        if len(lines) >= limit:
            break
    return lines


def again_prompt(qualname: str, signature: str, stopped: list[str], usages: list[str]) -> str:
    """What the reproduction request adds when no test reached the target the first time."""
    name = qualname.split(".")[-1]
    shown = (
        prompt_text("PROJECT_CONTRACT_USAGES").format(name=name, lines="\n".join(usages))
        if usages
        else ""
    )
    return prompt_text("PROJECT_CONTRACT_AGAIN").format(
        qualname=qualname, signature=signature, failures="\n".join(stopped), usages=shown
    )


MAX_USAGES = 4
"""Lines of the project's tests shown calling the target's name."""


def usages_in_tests(root: Path, test_paths: Iterable[str], name: str) -> list[str]:
    """Lines of the project's test files that call `name` (``path:line: text``), distinct.

    How the project's own tests reach a method (``type.convert(value, None, None)``) is how
    a reproduction test can; definitions and comments are left out.
    """
    call = re.compile(rf"(?<![\w]){re.escape(name)}\(")
    found: list[str] = []
    seen: set[str] = set()
    for rel in sorted(test_paths):
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not call.search(stripped) or stripped.startswith(("def ", "async def ", "#")):
                continue
            if stripped not in seen:
                seen.add(stripped)
                found.append(f"{rel}:{n}: {stripped[:160]}")
            if len(found) >= MAX_USAGES:
                return found
    return found


def reproduction_checks(source: str) -> list[list[Check]]:
    """The asserts of a model's test code as checks, one list per test, imports first in each.

    Checks run in the target module's namespace, so its own names need no import; the
    imports a test makes (``from geo import Circle``, ``import datetime``) are kept, in the
    order written, because what the test's asserts use may come from elsewhere. An import of
    the module itself is harmless. Module-level asserts are one more test. Tests that do not
    parse give nothing.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    imports: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and not _is_pytest(node):
            line = ast.unparse(node)
            if line not in imports:
                imports.append(line)
    tests = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    loose = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
    groups: list[list[Check]] = []
    for part in [*tests, ast.Module(body=loose, type_ignores=[])]:
        text = ast.unparse(part)
        checks = checks_from_tests(text, criterion=CRITERION)
        if imports:
            prefix = "\n".join(imports)
            checks = [c.model_copy(update={"call": f"{prefix}\n{c.call}"}) for c in checks]
        if checks:
            groups.append(checks)
    return groups


def chosen(
    groups: list[list[Check]], reaching: set[str], limit: int = MAX_MODEL_CHECKS
) -> list[Check]:
    """Up to `limit` checks of `groups` whose ``describe()`` is in `reaching`, one test at a time.

    Round robin over the tests in the order written, each test's checks in its order: a
    small model's first asserts of a test are its plainest, and its later tests, or a test
    that repeats one line with a counter until the reply is cut, are where it goes wrong;
    taking from every test keeps one bad test from filling the contract.
    """
    queues = [[c for c in group if c.describe() in reaching] for group in groups]
    kept: list[Check] = []
    seen: set[str] = set()
    while len(kept) < limit and any(queues):
        for queue in queues:
            while queue:
                check = queue.pop(0)
                if check.describe() not in seen:
                    seen.add(check.describe())
                    kept.append(check)
                    break
            if len(kept) >= limit:
                break
    return kept


def _is_pytest(node: ast.Import | ast.ImportFrom) -> bool:
    """``import pytest`` / ``from pytest import …``: the check runner needs none of it."""
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "pytest"
    return all(alias.name.split(".")[0] == "pytest" for alias in node.names)
