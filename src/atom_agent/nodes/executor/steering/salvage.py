"""A write_file cut off at the token limit: write its usable part, and say so on the next call.

A small model writing a test file often falls into repeating the same assertion until the
token limit cuts the call off: the reply is not a tool call, and asking again tends to end the
same way. The file's first lines are usually fine, though; the local model's wire format is
read by :func:`atom_agent.models.local_wire.salvage_write`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage

from atom_agent.models.local_wire import salvage_write
from atom_agent.prompts import prompt_text, register
from atom_agent.telemetry import emit

from ._calls import broken_call, cut_off, last_reply, replaced
from ._request import RequestEdit, with_note

SALVAGED_NOTE = register(
    "SALVAGED_NOTE",
    "Your last write_file reply was cut off at the token limit. {path} was saved with its "
    "first {kept} complete lines{repeats}. Check it (read_file, run_tests) and fix what is "
    "missing with a shorter write: keep each file under 60 lines, with fewer, distinct cases.",
)
"""On the call after a cut-off write_file whose complete lines were kept."""

SALVAGED = "atom_salvaged"
"""``response_metadata`` key of a reply rebuilt from a cut-off write (what was kept)."""


class SalvageWrite(AgentMiddleware[AgentState[Any], Any, Any]):
    """Turns a reply whose write_file was cut off at the token limit into the usable write."""

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The reply, its cut-off write_file replaced by the write of its complete lines."""
        response = handler(request)
        return salvaged(response) or response


class SalvageNote(RequestEdit):
    """On the call right after a salvaged write, tell the model what was kept."""

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """`request` with the note, right after a salvaged write's result."""
        messages = request.messages
        at = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
        if at < 0 or at + 1 >= len(messages) or not isinstance(messages[at + 1], ToolMessage):
            return request  # no reply yet, or not right after its tool result
        kept = (messages[at].response_metadata or {}).get(SALVAGED)
        if not isinstance(kept, dict):
            return request
        repeats = kept.get("repeats") or 0
        return with_note(
            request,
            prompt_text("SALVAGED_NOTE").format(
                path=kept.get("path"),
                kept=kept.get("lines"),
                repeats=f" ({repeats} repeated test lines left out)" if repeats else "",
            ),
        )


def salvaged(response: ModelResponse[Any]) -> ModelResponse[Any] | None:
    """`response` with its cut-off write_file turned into the call that writes what is usable."""
    last = last_reply(response)
    if last is None or broken_call(response) is None or not cut_off(last):
        return None
    kept = salvage_write(str(last.invalid_tool_calls[0].get("args") or ""))
    if kept is None:
        return None
    emit("executor.salvaged_write", path=kept.path, lines=kept.kept, repeats=kept.dropped_repeats)
    call = {
        "name": "write_file",
        "args": {"path": kept.path, "content": kept.content},
        "id": last.invalid_tool_calls[0].get("id") or "call_salvaged",
        "type": "tool_call",
    }
    metadata = {
        **(last.response_metadata or {}),
        SALVAGED: {"path": kept.path, "lines": kept.kept, "repeats": kept.dropped_repeats},
    }
    message = AIMessage(
        content="",
        tool_calls=[call],
        usage_metadata=last.usage_metadata,
        response_metadata=metadata,
        id=last.id,
    )
    return replaced(response, message)
