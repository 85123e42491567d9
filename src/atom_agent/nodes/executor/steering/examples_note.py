"""After a failing run_tests, what the task's own ``>>>`` examples say of impl.py."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import ToolMessage

from atom_agent.checks.examples import examples_feedback
from atom_agent.telemetry import emit

from ..attempt import attempt_of, tests_passed
from ._request import RequestEdit, with_note

EXAMPLES_NOTE = "What the task's own examples say: {lines}"
"""After a failing run_tests: which side the task's ``>>>`` examples prove wrong."""


class ExamplesNote(RequestEdit):
    """Settles which side a failing test run got wrong: the code or the model's own test.

    A small model takes a failing test for a wrong implementation and rewrites correct code,
    while its own test holds the wrong expected value; the task's examples settle which.
    """

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """`request` with the examples' verdict after a failing run_tests (for this call)."""
        last = request.messages[-1] if request.messages else None
        if not isinstance(last, ToolMessage) or last.name != "run_tests":
            return request
        check = attempt_of(request.runtime).check_examples
        if check is None or tests_passed(str(last.content)):
            return request
        lines = examples_feedback(check(), tests_failed=True)
        if not lines:
            return request
        emit("executor.examples_note", fix="code" if "fix the code" in lines[0] else "test")
        return with_note(request, EXAMPLES_NOTE.format(lines=" ".join(lines)))
