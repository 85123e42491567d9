"""Draft-first attempts: whole-file drafts in the model's natural format, chosen by execution.

Models write measurably worse code inside a JSON tool-call argument than in a fenced block
(Aider, 2024). An attempt therefore starts the way one plain call of the model would: the task,
and "reply with the whole impl.py in one ```python block". The draft is run against the step's
contract at once; a draft that passes is the attempt. One that fails is met by independent
samples of the same prompt (witnesses: candidates, and the testimony that finds a wrong check); the
best is kept (most checks passed). Nothing is asked to repair its own
code: told what failed, the 1.5B model handed back the same module in 19 of 20 whole-file
retries and focused repairs met no check anywhere (docs/measurements.md), so the calls go to
fresh samples (CodeT, AlphaCode) and the next attempt, which is told what failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.checks.contract import ContractReport
from atom_agent.checks.own import merged, outranking, own_checks
from atom_agent.errors import TimeLimitReached
from atom_agent.models.sampling import sample
from atom_agent.names import defined_in_code
from atom_agent.prompts import prompt_text, register
from atom_agent.replies import complete_from_task, extract_code
from atom_agent.state import IMPL_FILE, Check, Plan, PlanStep
from atom_agent.telemetry import emit
from atom_agent.verification.crossexam import suspects

from .pool import Candidate, ContractProver, Drafts

logger = logging.getLogger(__name__)

_FAILURES_SHOWN = 4

DRAFT_TASK = register(
    "DRAFT_TASK",
    """\
{task}
{step}{dependencies}{earlier}
Write the complete Python module `impl.py` for this: only the implementation, no tests or \
usage examples (the tests are written separately). Reply with the whole file in one \
```python block, nothing else.""",
)

DRAFT_STEP = register(
    "DRAFT_STEP",
    """
This is one step of a larger plan: {title}
{description}
It must define: {defines}
""",
)

DRAFT_DEPENDENCIES = register(
    "DRAFT_DEPENDENCIES",
    """
Code of earlier steps you can import:
{dependencies}
""",
)

DRAFT_MEMORIES = register(
    "DRAFT_MEMORIES",
    """
Notes from earlier runs (hints only: where they disagree with the task or its examples, the \
task wins):
{notes}
""",
)

DRAFT_EARLIER = register(
    "DRAFT_EARLIER",
    """
An earlier attempt was rejected: {feedback}
""",
)


def draft_prompt(
    task: str,
    plan: Plan,
    step: PlanStep,
    dependencies: dict[str, str],
    earlier: str,
    notes: Sequence[str] = (),
) -> str:
    """The draft request of one attempt.

    It holds the task, the step (when the plan has several), the dependencies' importable
    names, a few notes recalled from earlier runs (hints the task's own examples outrank),
    and the last rejection's executed evidence.
    """
    single = len(plan.steps) == 1
    step_text = (
        ""
        if single
        else prompt_text("DRAFT_STEP").format(
            title=step.title,
            description=step.description.strip(),
            defines=", ".join(step.defines) or "(see the description)",
        )
    )
    deps = (
        prompt_text("DRAFT_DEPENDENCIES").format(
            dependencies="\n".join(f"- {line}" for line in dependencies.values())
        )
        if dependencies
        else ""
    )
    earlier_text = (
        prompt_text("DRAFT_EARLIER").format(feedback=earlier.strip()[:1200]) if earlier else ""
    )
    if notes:
        deps += prompt_text("DRAFT_MEMORIES").format(notes="\n".join(f"- {n}" for n in notes))
    return prompt_text("DRAFT_TASK").format(
        task=task.strip(), step=step_text, dependencies=deps, earlier=earlier_text
    )


def temperatures(profile_warming: Sequence[float], attempt: int) -> list[float]:
    """The first candidate's and the later ones' temperatures for attempt `attempt` (1-based).

    Attempt 1 starts greedy; later attempts start warmer, so a retry does not repeat the
    rejected greedy draft.
    """
    ladder = [0.0, *profile_warming]
    shift = 0.2 * (attempt - 1)
    return [round(min(1.2, t + shift), 2) for t in ladder]


def retry_temperatures(ladder: Sequence[float], keeps_previous: bool) -> list[float]:
    """The temperatures a retry asks at: one that keeps the previous choice asks greedy first.

    `keeps_previous`: the previous attempt's choice is a candidate again and the retry is told
    what failed (a project step's retry), so the greedy answer to the new request is worth a
    call; the ladder keeps its length.
    """
    if not (keeps_previous and len(ladder) > 1):
        return list(ladder)
    return [0.0, *ladder[1:-1]]


WITNESS_TEMPERATURE = 0.8
"""Sampling temperature of the independent implementations that cross-examine a check."""


def write_drafts(
    *,
    model: BaseChatModel,
    prompt: str,
    temperature: float,
    checks: Sequence[Check],
    task: str,
    defines: Sequence[str],
    prover: ContractProver,
    witnesses: int = 0,
    first: str | None = None,
    drawn: Sequence[str] = (),
    own: Sequence[Check] = (),
) -> Drafts:
    """Draft; cross-examine a failing draft with independent witnesses.

    1. The draft (at `temperature`), or `first` when given: code already written for the task
       (candidate zero, the model's plain answer), which then costs no call. A draft that
       meets the contract is the attempt.
    2. `witnesses` independent samples of the same prompt: each is a candidate too, and a
       failing check that every witness contradicts with the draft's very result is suspect.
       A draft that meets every check but the suspect ones is the attempt.

    `drawn`: independent implementations already sampled for the task and never shown a
    check (candidate zero's whole-task samples): the first witnesses, at no call; fresh ones
    are sampled only for the rest of `witnesses`.

    `own`: the step's own tests from earlier attempts. With the tests the draft wrote after
    its code they are ``drafts.own``; they run on every candidate after the contract's checks
    (``drafts.own_run``), save those a check the task states contradicts (the task wins). A
    witness's tests are not read: the candidates before it never ran them.

    `prover` proves each candidate (in its folder, with its dependencies' exports); it runs
    `checks` and the own tests, whatever checks it was made with.
    """
    drafts = Drafts(messages=[HumanMessage(prompt)])
    reply = _draft_reply(model, drafts, first, temperature, defines)
    runs = _own_tests(drafts, reply, checks, own, defines)
    drafts.prove = prover.with_checks(runs)
    origin = "plain" if first else "draft"
    draft = _offer(drafts, _code_of(reply, task, defines), defines, origin, temperature)
    if drafts.passes(draft) or not runs:
        return drafts
    if not _cross_examine(drafts, model, prompt, task, defines, drawn, witnesses):
        if draft.report is not None:
            reports = [c.report for c in drafts.candidates[1:] if c.report is not None]
            drafts.suspect = suspects(draft.report, reports)
    return drafts


def _draft_reply(
    model: BaseChatModel,
    drafts: Drafts,
    first: str | None,
    temperature: float,
    defines: Sequence[str],
) -> AIMessage:
    """The draft's reply, added to its conversation: `first` as a reply (no call), or sampled."""
    reply = (
        AIMessage(content=f"```python\n{first.rstrip()}\n```")
        if first
        else sample(
            model, drafts.messages, temperature, purpose="draft", code_only="code", names=defines
        )  # fmt: skip
    )
    drafts.messages.append(reply)
    return reply


def _own_tests(
    drafts: Drafts,
    reply: AIMessage,
    checks: Sequence[Check],
    own: Sequence[Check],
    defines: Sequence[str],
) -> list[Check]:
    """Set the drafts' own tests (earlier ones and the draft's); what every candidate runs.

    The contract's checks, then the own tests no check the task states contradicts.
    """
    written = own_checks(extract_code(reply.text, tests=True), defines)
    drafts.own = merged(checks, own, written)
    drafts.own_run = [c for c in drafts.own if outranking(c, checks) is None]
    return [*checks, *drafts.own_run]


def _cross_examine(
    drafts: Drafts,
    model: BaseChatModel,
    prompt: str,
    task: str,
    defines: Sequence[str],
    drawn: Sequence[str],
    witnesses: int,
) -> bool:
    """Offer the witnesses: the samples drawn already, then fresh ones. True: one passed.

    Fresh witnesses are sampled until `witnesses` with code were heard, with one spare for a
    reply without code.
    """
    heard = 0
    for source in drawn:
        witness = _offer(drafts, source, defines, "task_sample", -1.0)
        if drafts.passes(witness):
            return True
        heard += bool(witness.source.strip())
    for _ in range(witnesses + 1 if witnesses > heard else 0):
        try:
            reply = sample(model, [HumanMessage(prompt)], WITNESS_TEMPERATURE, purpose="witness",
                           code_only="code", names=defines)  # fmt: skip
        except TimeLimitReached as exc:  # the candidates so far are proven: the attempt decides
            drafts.cut = f"{exc.reason}: {heard} of {witnesses} witnesses heard"
            emit("executor.witnesses_cut", heard=heard, wanted=witnesses, reason=exc.reason)
            return False
        drafts.side.append(reply)
        code = _code_of(reply, task, defines)
        witness = _offer(drafts, code, defines, "witness", WITNESS_TEMPERATURE)
        if drafts.passes(witness):
            return True
        heard += bool(witness.source.strip())
        if heard >= witnesses:
            break
    return False


def _code_of(reply: AIMessage, task: str, defines: Sequence[str]) -> str:
    """The module a reply holds, completed from the task (the imports its code gave)."""
    return complete_from_task(extract_code(reply.text), task, defines)


def _offer(
    drafts: Drafts, source: str, defines: Sequence[str], origin: str, temperature: float
) -> Candidate:
    """Offer `source` to the drafts' pool (not informed), and say how it did.

    Code that defines nothing the step defines (tests or prose) is offered as no code.
    """
    if defines and not set(defines) & set(defined_in_code(source)):
        source = ""
    candidate = drafts.offer(source, origin=origin, temperature=temperature, informed=False)
    if candidate.report is not None:
        emit(
            "executor.draft",
            candidate=candidate.k,
            temperature=temperature,
            summary=candidate.report.summary(),
            passed=drafts.passes(candidate),
        )
    return candidate


def failure_lines(report: ContractReport, suspect: set[int] | None = None) -> str:
    """The failed checks (not suspect), the task's own first, each with what the code gave."""
    lines = []
    failed = [r for i, r in enumerate(report.results) if i not in (suspect or set())]
    failed = [r for r in failed if r.status in ("failed", "error", "timeout")]
    # The task's own checks first: they are certain where the model's tests may be wrong;
    # the drafts' own tests last.
    failed.sort(key=lambda r: {"planner": 1, "own": 2}.get(r.check.origin, 0))
    for result in failed[:_FAILURES_SHOWN]:
        why = result.reason or f"got {result.got}"
        where = f" (at {result.line})" if result.line else ""
        lines.append(f"- {result.check.describe()[:200]}: {why[:200]}{where}")
    if report.error and not lines:
        lines.append(f"- {report.error[:300]}")
    return "\n".join(lines)


def dependency_exports(
    artifacts: Mapping[str, Path], import_of: Callable[[str], str]
) -> dict[str, list[str]]:
    """``{"deps.x.impl": ["f", "g"]}``: each dependency's module and what its code defines."""
    exports: dict[str, list[str]] = {}
    for dep_id, path in artifacts.items():
        impl = path / IMPL_FILE
        names = defined_in_code(impl.read_text(errors="replace")) if impl.is_file() else []
        exports[import_of(dep_id)] = names
    return exports


def dependency_lines(
    artifacts: Mapping[str, Path], import_of: Callable[[str], str]
) -> dict[str, str]:
    """``{dep_id: "from deps.x.impl import f, g"}`` for the dependencies' committed code."""
    lines: dict[str, str] = {}
    for dep_id, path in artifacts.items():
        module = import_of(dep_id)
        names = dependency_exports({dep_id: path}, import_of)[module]
        lines[dep_id] = f"from {module} import {', '.join(names)}" if names else f"import {module}"
    return lines
