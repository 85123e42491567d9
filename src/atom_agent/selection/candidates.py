"""Candidate zero (one plain call of the model for the whole task) and selection by execution.

Whatever the plan, the first candidate for the task is what one plain call of the model gives,
asked exactly as the single-shot baseline asks it. The agent replaces it only with code that
executes better on the checks: the task's own checks first (the user's word), then all checks
(the planner model's contract too). Where the task's checks are right, the agent can then not be
worse than asking its model once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.models.sampling import sample
from atom_agent.names import defined_in_code
from atom_agent.prompts import prompt_text, register
from atom_agent.replies import complete_from_task, extract_code
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.state import Check, Clause
from atom_agent.workspace.atomic import atomic_write_text

from .rank import rank

PLAIN_TASK = register(
    "PLAIN_TASK",
    """\
{task}

Write the complete Python module for this. Reply with the whole module in one ```python block, \
nothing else.""",
)
"""Candidate zero: the task asked once, exactly as the single-shot baseline asks it."""


@dataclass(frozen=True)
class PlainAnswer:
    """The model's plain answer to the whole task: the reply and the code read from it."""

    source: str
    reply: AIMessage
    seconds: float = 0.0
    """How long the call took: what one plain call of this model costs on this task."""


def ask_plain(
    model: BaseChatModel,
    task: str,
    names: Sequence[str],
    *,
    end_at_tests: bool = False,
    temperature: float = 0.0,
) -> PlainAnswer:
    """One call of `model` with the single-shot prompt; its module ('' when no code).

    Greedy unless `temperature` says otherwise (the warming baseline's samples).

    The code is read from the reply the way a draft's is (the longest fenced block that
    parses, tests after the code left out, imports the task's code gave put back); a reply
    that defines none of `names` has no candidate in it. `end_at_tests`: the reply may end
    where its tests begin after code defining all of `names` (the agent's call: the code is
    the same, the tests are left out anyway); the single-shot baseline is asked without.
    """
    started = time.monotonic()
    reply = sample(
        model,
        [HumanMessage(prompt_text("PLAIN_TASK").format(task=task.strip()))],
        temperature,
        purpose="plain" if end_at_tests else "baseline",
        code_only="module" if end_at_tests else "",
        names=names,
    )
    seconds = time.monotonic() - started
    source = complete_from_task(extract_code(reply.text), task, names)
    if names and not set(names) & set(defined_in_code(source)):
        source = ""
    return PlainAnswer(source=source, reply=reply, seconds=seconds)


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


@dataclass(frozen=True)
class Choice:
    """The answer to the whole task that executes best, among the plain one and samples."""

    source: str
    report: ContractReport | None
    index: int
    """0: the plain answer; k: the k-th sample."""
    replies: list[AIMessage]
    """The samples' replies, in order (the plain answer's not included)."""
    reply_text: str
    """The chosen answer's reply as the model wrote it."""


Judge = Callable[[str, Path], ContractReport | None]
"""Runs the task's checks on a module written to a folder (None: nothing to run)."""


def best_of(
    model: BaseChatModel,
    task: str,
    names: Sequence[str],
    first: PlainAnswer,
    report: ContractReport | None,
    *,
    judge: Judge,
    temperatures: Sequence[float],
    folder: Path,
) -> Choice:
    """The plain answer, or a sample of the same prompt that executes better on the task's checks.

    Samples are drawn (one per temperature, the plain prompt, never shown a check) only when
    the plain answer has no code or fails a check the task states; sampling stops at the first
    answer that meets every such check. An answer replaces the best so far only when it passes
    strictly more of the task's checks (then more checks in all): with no sample better, the
    plain answer stays, so the choice is never worse on the task's checks than asking once.
    """
    best = Choice(first.source, report, 0, [], first.reply.text)
    if not _worth_sampling(first.source, report):
        return best
    replies: list[AIMessage] = []
    prompt: list[BaseMessage] = [HumanMessage(prompt_text("PLAIN_TASK").format(task=task.strip()))]
    for k, temperature in enumerate(temperatures, start=1):
        reply = sample(model, prompt, temperature, purpose="task_sample", code_only="module",
                       names=names)  # fmt: skip
        replies.append(reply)
        source = complete_from_task(extract_code(reply.text), task, names)
        if names and not set(names) & set(defined_in_code(source)):
            continue
        found = judge(source, folder / str(k))
        if rank(found) > rank(best.report):
            best = Choice(source, found, k, replies, reply.text)
        if found is not None and found.task_checks_hold() and found.all_passed():
            break
    return Choice(best.source, best.report, best.index, replies, best.reply_text)


def _worth_sampling(source: str, report: ContractReport | None) -> bool:
    """No code, or a check the task states ran and did not pass."""
    if not source.strip():
        return True
    return report is not None and any(
        r.check.origin == "task" and r.status not in ("passed", "invalid") for r in report.results
    )


@dataclass(frozen=True)
class Floor:
    """The task's checks run on what the run hands back and on the plain answer."""

    package: ContractReport | None
    plain: ContractReport | None

    @property
    def plain_wins(self) -> bool:
        """The plain answer executes strictly better on the task's checks than the package."""
        return rank(self.plain) > rank(self.package)

    def summary(self) -> str:
        """``the committed steps pass 2 of the task's 7 checks, the plain answer 5``."""

        def passed(report: ContractReport | None) -> int:
            return rank(report).task if report is not None else 0

        ran = [r for r in (self.package, self.plain) if r is not None]
        total = max((sum(1 for x in r.results if x.check.origin == "task") for r in ran), default=0)
        return (
            f"the committed steps pass {passed(self.package)} of the task's {total} checks, "
            f"the plain answer {passed(self.plain)}"
        )


def floor(
    plain: str,
    package_dir: Path,
    package: str,
    clauses: Sequence[Clause],
    *,
    folder: Path,
    runner: SandboxRunner,
    limits: Limits,
    defines: Sequence[str],
) -> Floor:
    """Run the task's checks on the result package and on the plain answer.

    The package is imported as `package` from `package_dir`; the plain answer is written to
    `folder`. The plain answer is the floor of what a run hands back: a package of committed
    steps that passes fewer of the task's checks (a step left uncommitted, a name the task
    states never written) is not better than asking once.
    """
    checks: list[Check] = [c for clause in clauses for c in clause.checks]
    if not checks or not plain.strip():
        return Floor(None, None)
    mine = run_contract(
        checks, staging=package_dir, runner=runner, limits=limits, python_path=[package_dir],
        defines=defines, module=package,
    )  # fmt: skip
    other = meets_clauses(
        plain, clauses, folder=folder, runner=runner, limits=limits, defines=defines
    )
    return Floor(mine, other)
