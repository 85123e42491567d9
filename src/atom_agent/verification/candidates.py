"""Candidate zero (one plain call of the model for the whole task) and selection by execution.

Whatever the plan, the first candidate for the task is what one plain call of the model gives,
asked exactly as the single-shot baseline asks it. The agent replaces it only with code that
executes better on the checks: the task's own checks first (the user's word), then all checks
(the planner model's contract too). Where the task's checks are right, the agent can then not be
worse than asking its model once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent import prompts
from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.checks.names import defined_in_code
from atom_agent.drafting import complete_from_task, extract_code, sample
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import Check, Clause
from atom_agent.workspace.atomic import atomic_write_text


@dataclass(frozen=True)
class PlainAnswer:
    """The model's plain answer to the whole task: the reply and the code read from it."""

    source: str
    reply: AIMessage


def ask_plain(model: BaseChatModel, task: str, names: Sequence[str]) -> PlainAnswer:
    """One greedy call of `model` with the single-shot prompt; its module ('' when no code).

    The code is read from the reply the way a draft's is (the longest fenced block that
    parses, tests after the code left out, imports the task's code gave put back); a reply
    that defines none of `names` has no candidate in it.
    """
    reply = sample(model, [HumanMessage(prompts.PLAIN_TASK.format(task=task.strip()))], 0.0)
    source = complete_from_task(extract_code(reply.text), task, names)
    if names and not set(names) & set(defined_in_code(source)):
        source = ""
    return PlainAnswer(source=source, reply=reply)


def meets_clauses(
    source: str,
    clauses: Sequence[Clause],
    *,
    folder: Path,
    runner: SandboxRunner,
    limits: Limits,
    defines: Sequence[str],
) -> ContractReport | None:
    """Run every check the task's clauses state against `source` (None: no check to run)."""
    checks: list[Check] = [c for clause in clauses for c in clause.checks]
    if not checks or not source.strip():
        return None
    atomic_write_text(folder / "impl.py", source)
    return run_contract(checks, staging=folder, runner=runner, limits=limits, defines=defines)
