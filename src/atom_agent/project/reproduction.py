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

from atom_agent import prompts
from atom_agent.checks.asserts import checks_from_tests
from atom_agent.state import Check

MAX_MODEL_CHECKS = 6
"""Reproduction checks kept per target (after the baseline run, shortest first)."""
CRITERION = "the model's reproduction test of the task"


def reproduction_prompt(task: str, qualname: str, path: str, around: str) -> str:
    """The request for reproduction tests: the task and the code around the unwritten target."""
    return prompts.PROJECT_CONTRACT.format(
        task=task.strip(), qualname=qualname, path=path, excerpt=around
    )


def reproduction_checks(source: str) -> list[Check]:
    """The asserts of a model's test code as checks, the code's imports first in each setup.

    Checks run in the target module's namespace, so its own names need no import; the
    imports a test makes (``from click import Choice``, ``import datetime``) are kept, in the
    order written, because what the test's asserts use may come from elsewhere. An import of
    the module itself (``from <module> import *``) is harmless. Tests that do not parse give
    nothing.
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
    checks = checks_from_tests(source, criterion=CRITERION)
    if not imports:
        return checks
    prefix = "\n".join(imports)
    return [c.model_copy(update={"call": f"{prefix}\n{c.call}"}) for c in checks]


def _is_pytest(node: ast.Import | ast.ImportFrom) -> bool:
    """``import pytest`` / ``from pytest import …``: the check runner needs none of it."""
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "pytest"
    return all(alias.name.split(".")[0] == "pytest" for alias in node.names)
