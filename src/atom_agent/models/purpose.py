"""What a model call is for: its purpose, step and attempt, in the call's RunnableConfig metadata.

Every model call the agent makes is made inside :func:`calling` (the purpose) and, in the
executor and reflector, inside :func:`for_attempt` (the step and attempt). Both set LangChain's
child-runnable config (the context variable every ``invoke`` reads its config from, as LangGraph
does for a node), so the call's ``metadata`` carries ``atom_purpose``, ``atom_step`` and
``atom_attempt`` — through any runnable in between (structured output, a ReAct agent) — and
callback handlers, tracers and scripted test models see what the call is for without reading its
prompt. :func:`call_info` reads it back.
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

PURPOSE_KEY = "atom_purpose"
STEP_KEY = "atom_step"
ATTEMPT_KEY = "atom_attempt"


@dataclass(frozen=True)
class CallInfo:
    """What one model call is for, read from its metadata (empty fields: not stated)."""

    purpose: str = ""
    step: str = ""
    attempt: int = 0


def call_info(metadata: Mapping[str, Any] | None) -> CallInfo:
    """The :class:`CallInfo` in a call's metadata (a run manager's or a config's)."""
    data = metadata or {}
    attempt = data.get(ATTEMPT_KEY)
    return CallInfo(
        purpose=str(data.get(PURPOSE_KEY) or ""),
        step=str(data.get(STEP_KEY) or ""),
        attempt=attempt if isinstance(attempt, int) else 0,
    )


@contextmanager
def calling(purpose: Purpose) -> Iterator[None]:
    """Model calls made inside are for `purpose`."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown call purpose {purpose!r}; one of {PURPOSES}")
    with _metadata({PURPOSE_KEY: purpose}):
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
