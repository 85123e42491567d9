"""No prose answers until impl.py and test.py exist; after a tool result, say which is missing."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import ToolMessage

from ..attempt import attempt_of
from ._request import RequestEdit, with_note

MISSING_FILES_NOTE = (
    "Still missing in your staging area: {missing}. Write {it} now with write_file "
    "(impl.py: the implementation; test.py: pytest tests that import from impl)."
)
"""After a tool result, while impl.py or test.py is still missing."""


class RequireFiles(RequestEdit):
    """Until the required files exist the model must call a tool (``tool_choice="any"``).

    Small models often "answer" the task in prose on the first turn; an attempt that wrote
    nothing can only fail, so the answer option is taken away until it has.

    Args:
        keep_working: also once the files exist. A small model "gives up" in prose after a
            failing test run; code decides when its attempt ends (tests pass or the tool
            budget is spent, :mod:`.stop`), so it must keep working.
        force: force the call with ``tool_choice``; otherwise only the missing-files note
            asks for it. Forced tool choice is only as good as the server behind the model:
            the embedded model enforces it with a grammar, but llama.cpp's server lets a
            model write text before the call it must make (a model that writes its call as
            JSON in a fenced block then pads the reply to its token limit), and some servers
            ignore it. A standard model is asked, and a call it writes as text is recovered
            (:mod:`.recover_calls`).
    """

    def __init__(self, *, keep_working: bool = False, force: bool = True) -> None:
        super().__init__()
        self.keep_working = keep_working
        self.force = force

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Force a tool call (and name the missing files after a tool result)."""
        if not request.tools:
            return request
        missing = attempt_of(request.runtime).missing_files()
        if not missing:
            return request.override(tool_choice="any") if self.keep_working else request
        last = request.messages[-1] if request.messages else None
        if isinstance(last, ToolMessage):
            request = with_note(request, missing_files_note(missing))
        return request.override(tool_choice="any") if self.force else request


def missing_files_note(missing: list[str]) -> str:
    """The note naming the files still missing."""
    return MISSING_FILES_NOTE.format(
        missing=" and ".join(missing), it="it" if len(missing) == 1 else "them"
    )
