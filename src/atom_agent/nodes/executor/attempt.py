"""What one attempt passes to the executor agent as its runtime context, and what it reads back."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.errors import ToolConfigError
from atom_agent.state import REQUIRED_FILES
from atom_agent.tools.context import ToolContext, tool_context

ASK_USER = "ask_user"
"""The tool the executor calls to ask the user a question (the attempt then ends)."""


@dataclass(frozen=True)
class AttemptContext(ToolContext):
    """What one attempt passes to the executor agent as ``context=``.

    The tools read the attempt (scope, session, runner, memory) from the
    :class:`~atom_agent.tools.context.ToolContext` part; the steering middlewares read the rest.

    Attributes:
        max_tool_calls: the attempt's tool-call budget.
        start_passed: how many of the staged checks (test.py) the staged start passes (None
            when nothing was staged): a test run that passes no more makes no progress.
    """

    max_tool_calls: int = 12
    start_passed: int | None = None
    time_limit_s: float | None = None
    """Seconds the tool loop may run (None: no limit); it ends before a call after them."""
    started_at: float = field(default_factory=lambda: time.monotonic())
    """When the attempt's loop started (``time.monotonic``, read when the loop starts)."""

    def time_is_up(self) -> bool:
        """Whether the loop has used its time."""
        return self.time_limit_s is not None and time.monotonic() - self.started_at >= (
            self.time_limit_s
        )

    @property
    def staging(self) -> Path:
        """The attempt's staging area (where impl.py and test.py must appear)."""
        return self.need_scope().staging

    def files_written(self) -> bool:
        """Whether every required file is in the staging area."""
        return not self.missing_files()

    def missing_files(self) -> list[str]:
        """The required files not (yet) in the staging area."""
        return [f for f in REQUIRED_FILES if not (self.staging / f).is_file()]


def attempt_of(runtime: Any) -> AttemptContext:
    """The :class:`AttemptContext` of an executor agent run.

    Raises:
        ToolConfigError: the agent was invoked without one (a wiring error).
    """
    context = tool_context(runtime)
    if not isinstance(context, AttemptContext):
        raise ToolConfigError(
            f"the executor agent needs context=AttemptContext(...), not {type(context).__name__}"
        )
    return context


def tests_count(content: str) -> int | None:
    """How many tests a run_tests tool result reports passing (None: not a test result)."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        return None
    tests = data.get("tests") if isinstance(data, dict) else None
    passed = tests.get("passed") if isinstance(tests, dict) else None
    return passed if isinstance(passed, int) else None


def tests_passed(content: str) -> bool:
    """Whether a run_tests tool result reports a clean pass (≥ 1 test, no failure, no error)."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        return False
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, dict):
        return False
    return bool(
        data.get("ok", data.get("exit_code") == 0)
        and tests.get("passed", 0) > 0
        and tests.get("failed", 0) == 0
        and tests.get("errors", 0) == 0
    )
