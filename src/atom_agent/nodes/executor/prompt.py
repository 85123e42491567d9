"""Tiered context reconstruction: the executor's prompt for one attempt, within a token budget.

Pinned (never dropped): the task, the plan outline, the step and its criteria, the files to
write. Tier 2 (global): long-term memories relevant to the step, ranked by the memory manager
(relevance, confidence, recency) and kept only when they share a name, a file or a purpose with
the step (`atom_agent.memory.relevance`), and the dependencies' committed artifacts with a short
excerpt. Tier 1 (local): what earlier attempts of the step did and why they failed, most
recent first; a tool call and its result are one unit, so pruning never separates them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.context import Context
from atom_agent.memory import MemoryManager, MemoryRecord
from atom_agent.memory.records import MAX_RECALL_LIMIT
from atom_agent.memory.relevance import Reason, StepFocus, relevance
from atom_agent.memory.rules import in_force, is_rule
from atom_agent.prompts import prompt_text, register
from atom_agent.session import SessionContext
from atom_agent.state import IMPL_FILE, Plan, PlanStep, outline
from atom_agent.workspace import AttemptRef, StepRef, Workspace

EXECUTOR_PINNED = register(
    "EXECUTOR_PINNED",
    """\
# Task
{task}

# Plan
{outline}

# Your step: {step_id} — {title}
{description}

Acceptance criteria:
{criteria}

# Files
{files}

Attempt {attempt} of {max_attempts}.""",
)

EXECUTOR_TIER2 = register(
    "EXECUTOR_TIER2",
    """\
# What earlier work established
{memories}{dependencies}""",
)

EXECUTOR_TIER1 = register(
    "EXECUTOR_TIER1",
    """\
# Earlier attempts of this step (most recent first) — do not repeat their mistakes
{attempts}""",
)

EXECUTOR_ANSWERS = register(
    "EXECUTOR_ANSWERS",
    """\
# The user answered your questions
{answers}""",
)

CHARS_PER_TOKEN = 4
_SIGNATURE = re.compile(r"^\s*(def|class|async def)\s+\w+.*$", re.MULTILINE)
_TAIL_CHARS = 1500


def estimate_tokens(text: str) -> int:
    """A provider-independent token estimate (≈ 4 characters per token)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


@dataclass
class ExecutorPrompt:
    """The reconstructed prompt and what went into it."""

    text: str
    tokens: int = 0
    memory_reasons: dict[str, str] = field(default_factory=dict)
    """Each memory in the prompt (by id, in order) and why (``shares name hex_decode``)."""
    unrelated: list[str] = field(default_factory=list)
    """Recalled memories the relevance gate kept out (they share nothing with the step)."""


class _Budget:
    def __init__(self, tokens: int) -> None:
        self.left = tokens

    def take(self, text: str) -> bool:
        cost = estimate_tokens(text)
        if cost > self.left:
            return False
        self.left -= cost
        return True


@dataclass
class _Recalled:
    """Tier 2's memories: the lines that fit, why each is there, those the gate kept out."""

    lines: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    unrelated: list[str] = field(default_factory=list)


def reconstruct_context(
    *,
    ctx: Context,
    task: str,
    plan: Plan,
    step: PlanStep,
    statuses: dict[str, Any],
    workspace: Workspace,
    step_ref: StepRef,
    attempt: AttemptRef,
    files_text: str,
    memory: MemoryManager | None,
    session: SessionContext,
    answers: list[dict[str, str]] | None = None,
) -> ExecutorPrompt:
    """Build the executor prompt for `attempt` of `step` within ``ctx.context_token_budget``."""
    pinned = _pinned(ctx, task, plan, step, statuses, attempt, files_text, answers)
    budget = _Budget(ctx.context_token_budget - estimate_tokens(pinned))
    # Tier 1 first in priority: the failures of this very step matter most for the next try.
    tier1 = [u for u in _attempt_units(workspace, step_ref, attempt.n) if budget.take(u)]
    recalled = _recalled(budget, memory, session, ctx, task, step)
    dep_lines = _dependencies(budget, workspace, step_ref)
    text = _assembled(pinned, recalled.lines, dep_lines, tier1)
    return ExecutorPrompt(text, estimate_tokens(text), recalled.reasons, recalled.unrelated)


def _pinned(
    ctx: Context,
    task: str,
    plan: Plan,
    step: PlanStep,
    statuses: dict[str, Any],
    attempt: AttemptRef,
    files_text: str,
    answers: list[dict[str, str]] | None,
) -> str:
    """What the prompt always holds: task, outline, step, criteria, files, the user's answers."""
    pinned = prompt_text("EXECUTOR_PINNED").format(
        task=task.strip(),
        outline=outline(plan, statuses),
        step_id=step.id,
        title=step.title,
        description=step.description.strip(),
        criteria="\n".join(f"- {c}" for c in step.acceptance_criteria),
        files=files_text,
        attempt=attempt.n,
        max_attempts=ctx.max_attempts,
    )
    if answers:
        pinned += "\n\n" + prompt_text("EXECUTOR_ANSWERS").format(
            answers="\n".join(f"Q: {a['question']}\nA: {a['answer']}" for a in answers)
        )
    return pinned


def _recalled(
    budget: _Budget,
    memory: MemoryManager | None,
    session: SessionContext,
    ctx: Context,
    task: str,
    step: PlanStep,
) -> _Recalled:
    """Tier 2's memories: those relevant to the step, best first, while the budget lasts."""
    recalled = _Recalled()
    if memory is None:
        return recalled
    for record, why in recall_for_step(memory, session, ctx, step, task):
        if why is None:
            recalled.unrelated.append(record.id)
            continue
        line = f"- [{record.type}, confidence {record.confidence:.2f}] {record.content}"
        if budget.take(line):
            recalled.lines.append(line)
            recalled.reasons[record.id] = str(why)
    return recalled


def _dependencies(budget: _Budget, workspace: Workspace, step_ref: StepRef) -> list[str]:
    """Tier 2's dependencies: each with an excerpt, else only where it is, while room lasts."""
    lines: list[str] = []
    for dep_id, path in workspace.dependency_artifacts(step_ref).items():
        line = _dependency_entry(dep_id, path)
        if budget.take(line):
            lines.append(line)
        else:
            short = f"- {dep_id}: deps/{dep_id}/ (on disk at {path})"
            if budget.take(short):
                lines.append(short)
    return lines


def _assembled(pinned: str, memory_lines: list[str], dep_lines: list[str], tier1: list[str]) -> str:
    """The prompt's text: pinned, then tier 2 (memories, dependencies), then tier 1."""
    sections = [pinned]
    if memory_lines or dep_lines:
        sections.append(
            prompt_text("EXECUTOR_TIER2")
            .format(
                memories="Memories:\n" + "\n".join(memory_lines) + "\n" if memory_lines else "",
                dependencies="Committed code of the steps this one depends on:\n"
                + "\n".join(dep_lines)
                if dep_lines
                else "",
            )
            .rstrip()
        )
    if tier1:
        sections.append(prompt_text("EXECUTOR_TIER1").format(attempts="\n\n".join(tier1)))
    return "\n\n".join(sections)


def recall_for_step(
    memory: MemoryManager, session: SessionContext, ctx: Context, step: PlanStep, task: str
) -> list[tuple[MemoryRecord, Reason | None]]:
    """The project's long-term memories relevant to `step` (ranked by the memory manager).

    Each comes with why it belongs in the step's prompt (None: the relevance gate keeps it
    out: it shares nothing with the step of `task`). The query is the step's title,
    description and the names it must define: lessons and interfaces of earlier runs name the
    same functions. The project's rules are never among them: the rules in force ride in the
    task text within their own budget (:func:`~atom_agent.memory.rules.rules_block`), so a
    rule is never carried twice and a superseded one never.
    """
    if ctx.memory_recall_limit < 1:  # the user turned recall off
        return []
    names = " ".join(step.defines)
    query = f"{step.title}. {step.description}" + (f" Defines: {names}" if names else "")
    # Rules are asked for too (recall ranks every type together) and set aside, so each
    # rule in force gets a slot of its own: the memories a step can use keep the limit.
    rules = len(in_force(memory, session))
    found = memory.recall(
        session,
        query[:2000],
        min_confidence=ctx.memory_min_confidence,
        limit=min(ctx.memory_recall_limit + rules, MAX_RECALL_LIMIT),
    )
    focus = StepFocus.of(
        task=task,
        title=step.title,
        description=step.description,
        defines=step.defines,
        files=step.expected_files,
    )
    kept = [record for record in found if not is_rule(record)][: ctx.memory_recall_limit]
    return [(record, relevance(focus, record)) for record in kept]


DRAFT_NOTES = 3
"""Most memories in a draft prompt (small models: a few short lines, few tokens)."""
_NOTE_CHARS = 220


def draft_notes(
    memory: MemoryManager | None,
    session: SessionContext,
    ctx: Context,
    step: PlanStep,
    task: str = "",
) -> tuple[list[str], dict[str, str]]:
    """A few short lines of recalled memories for a draft prompt, and why each is there (by id).

    Only memories that share a name or a file with the step: a small model's prompt has no
    room for ones related by purpose alone (and a step that names nothing gets none).
    """
    if memory is None or not step.defines:
        return [], {}
    lines: list[str] = []
    reasons: dict[str, str] = {}
    for record, why in recall_for_step(memory, session, ctx, step, task):
        if len(reasons) == DRAFT_NOTES or why is None or why.kind == "purpose":
            continue
        text = " ".join(record.content.split())
        lines.append(text if len(text) <= _NOTE_CHARS else text[:_NOTE_CHARS] + "…")
        reasons[record.id] = str(why)
    return lines, reasons


def _dependency_entry(dep_id: str, path: Path) -> str:
    files = sorted(p.name for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    line = f"- {dep_id}: read as deps/{dep_id}/<file>, importable; files: {', '.join(files)}"
    impl = path / IMPL_FILE
    if impl.is_file():
        source = impl.read_text(errors="replace")
        lines = [m.group(0).strip() for m in _SIGNATURE.finditer(source)]
        if lines:
            line += "\n  impl.py defines:\n" + "\n".join(f"    {s}" for s in lines[:15])
    return line


def _attempt_units(workspace: Workspace, step_ref: StepRef, current: int) -> list[str]:
    """Prompt units from earlier attempts, most recent first: verdict, then call/result pairs."""
    units: list[str] = []
    for earlier in sorted(workspace.list_attempts(step_ref), key=lambda a: -a.n):
        if earlier.n >= current:
            continue
        units.extend(_units_of(workspace, earlier))
    return units


def _units_of(workspace: Workspace, attempt: AttemptRef) -> list[str]:
    units: list[str] = []
    if attempt.verdict_json.exists():
        verdict = workspace.read_verdict(attempt)
        parts = [f"## Attempt {attempt.n}: {verdict.get('outcome', 'failed')}"]
        if verdict.get("feedback"):
            parts.append(f"Reviewer feedback: {verdict['feedback']}")
        tests = verdict.get("tests") or {}
        if tests.get("summary"):
            parts.append(f"Tests: {tests['summary']}")
        if tests.get("output_tail"):
            parts.append("Test output (tail):\n" + str(tests["output_tail"])[-_TAIL_CHARS:])
        units.append("\n".join(parts))
    if attempt.history_json.exists():
        history = workspace.read_history(attempt)
        for call, result in reversed(_pairs(history)[-4:]):
            units.append(f"Attempt {attempt.n} called {call}\n  → {result}")
    return units


def _pairs(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool call, its result) pairs of a cleaned history, as short text, in order."""
    results = {
        m.get("tool_call_id"): str(m.get("content", "")) for m in history if m.get("type") == "tool"
    }
    pairs: list[tuple[str, str]] = []
    for message in history:
        for call in message.get("tool_calls") or []:
            args = json.dumps(call.get("args", {}))
            if len(args) > 200:
                args = args[:200] + "…"
            result = results.get(call.get("id"), "(no result)")
            if len(result) > 300:
                result = result[:300] + "…"
            pairs.append((f"{call.get('name')}({args})", result))
    return pairs
