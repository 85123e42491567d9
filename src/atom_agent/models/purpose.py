"""What a model call is for: purpose, step, attempt and source, in its RunnableConfig metadata.

Every model call the agent makes is made inside :func:`calling` (the purpose, and the source:
the named prompt the request is built from, :mod:`atom_agent.prompts`) and, when it works on
one step, inside :func:`for_attempt` (the step and attempt; module and project runs alike).
Both set LangChain's child-runnable config (the context variable every ``invoke`` reads its
config from, as LangGraph does for a node), so the call's ``metadata`` carries
``atom_purpose``, ``atom_source``, ``atom_step`` and ``atom_attempt`` — through any runnable in
between (structured output, a ReAct agent) — and callback handlers, tracers and scripted test
models see what the call is for without reading its prompt. :func:`call_info` reads it back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, get_args

from langchain_core.runnables.config import var_child_runnable_config

Purpose = Literal[
    "plan",
    "contract",
    "plain",
    "task_sample",
    "draft",
    "witness",
    "repair",
    "tool_loop",
    "project_plan",
    "project_edit",
    "reproduction",
    "baseline",
]
"""What a call is for: the planner's plan and contract; candidate zero (``plain``) and the
whole-task samples; an attempt's first draft and independent witnesses; a turn of
the tool loop; a project run's plan, edits and reproduction tests; an evaluation's single-shot
baseline; a benchmark's oracle-told repair (the agent itself asks for none)."""

PURPOSES: tuple[str, ...] = get_args(Purpose)

SOURCES: dict[str, str] = {
    "plan": "PLANNER_TASK",
    "contract": "CONTRACT_TASK",
    "plain": "PLAIN_TASK",
    "task_sample": "PLAIN_TASK",
    "baseline": "PLAIN_TASK",
    "draft": "DRAFT_TASK",
    "witness": "DRAFT_TASK",
    "tool_loop": "EXECUTOR_SYSTEM",
    "project_plan": "PROJECT_LOCATE",
    "project_edit": "PROJECT_EDIT",
    "reproduction": "PROJECT_CONTRACT",
}
"""The named prompt a call of each purpose is built from unless the caller says another (a
replan: ``PLANNER_REPLAN``; reproduction tests asked again: ``PROJECT_CONTRACT_AGAIN``). A
benchmark's repair sends no prompt of the agent's."""

PURPOSE_KEY = "atom_purpose"
STEP_KEY = "atom_step"
ATTEMPT_KEY = "atom_attempt"
SOURCE_KEY = "atom_source"


@dataclass(frozen=True)
class CallInfo:
    """What one model call is for, read from its metadata (empty fields: not stated)."""

    purpose: str = ""
    step: str = ""
    """The step the call works on ('' for a call about the whole task: plan, plain answer)."""
    attempt: int = 0
    """Which try at the step (1…); for a project's reproduction tests, 2 is the request made
    again after tests that never reached the target (0: not about one step)."""
    source: str = ""
    """The named prompt the request is built from (``PLAIN_TASK``, ``DRAFT_TASK``,
    ``PROJECT_CONTRACT_AGAIN`` …; :func:`atom_agent.prompts.names`)."""


def call_info(metadata: Mapping[str, Any] | None) -> CallInfo:
    """The :class:`CallInfo` in a call's metadata (a run manager's or a config's)."""
    data = metadata or {}
    attempt = data.get(ATTEMPT_KEY)
    return CallInfo(
        purpose=str(data.get(PURPOSE_KEY) or ""),
        step=str(data.get(STEP_KEY) or ""),
        attempt=attempt if isinstance(attempt, int) else 0,
        source=str(data.get(SOURCE_KEY) or ""),
    )


@contextmanager
def calling(purpose: Purpose, source: str = "") -> Iterator[None]:
    """Model calls made inside are for `purpose`, built from prompt `source` (default: its own)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown call purpose {purpose!r}; one of {PURPOSES}")
    source = source or SOURCES.get(purpose, "")
    with _metadata({PURPOSE_KEY: purpose, **({SOURCE_KEY: source} if source else {})}):
        yield


@contextmanager
def for_attempt(step: str, attempt: int) -> Iterator[None]:
    """Model calls made inside are for attempt `attempt` of step `step`."""
    with _metadata({STEP_KEY: step, ATTEMPT_KEY: attempt}):
        yield


@contextmanager
def _metadata(extra: Mapping[str, Any]) -> Iterator[None]:
    """The current child config with `extra` added to its metadata, for the block's calls."""
    current = var_child_runnable_config.get() or {}
    config: Any = {**current, "metadata": {**(current.get("metadata") or {}), **extra}}
    token = var_child_runnable_config.set(config)
    try:
        yield
    finally:
        var_child_runnable_config.reset(token)
