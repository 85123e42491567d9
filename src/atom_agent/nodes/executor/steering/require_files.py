"""Until impl.py and test.py exist, say after each tool result which is missing."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import ToolMessage

from atom_agent.prompts import prompt_text, register

from ..attempt import attempt_of
from ._request import RequestEdit, with_note

MISSING_FILES_NOTE = register(
    "MISSING_FILES_NOTE",
    "Still missing in your staging area: {missing}. Write {it} now with write_file "
    "(impl.py: the implementation; test.py: pytest tests that import from impl).",
)
"""After a tool result, while impl.py or test.py is still missing."""


class RequireFiles(RequestEdit):
    """After a tool result, while impl.py or test.py is missing, a note names what is missing.

    An attempt that wrote nothing can only fail. The model is asked, not forced: forced tool
    choice is only as good as the server behind the model (llama.cpp's server lets a model
    write text before the call it must make, and some servers ignore it); a call it writes as
    text is recovered (:mod:`.recover_calls`).
    """

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Name the missing files after a tool result."""
        if not request.tools:
            return request
        missing = attempt_of(request.runtime).missing_files()
        last = request.messages[-1] if request.messages else None
        if missing and isinstance(last, ToolMessage):
            return with_note(request, missing_files_note(missing))
        return request


def missing_files_note(missing: list[str]) -> str:
    """The note naming the files still missing."""
    return prompt_text("MISSING_FILES_NOTE").format(
        missing=" and ".join(missing), it="it" if len(missing) == 1 else "them"
    )
