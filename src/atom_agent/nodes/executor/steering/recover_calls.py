"""A tool call the model wrote into its text instead of as a call is taken as the call.

Served models (Qwen2.5-Coder behind vLLM, Ollama or llama-server among them) often answer a
tool turn with the call as JSON in the message content — bare, in a ```json fence, or in
Hermes ``<tool_call>`` tags — which the server's parser did not recognise. Read as an answer,
it would end the loop with nothing done. A call is recovered when the text is nothing but
call-shaped JSON (a name and an object of arguments). A name no bound tool has (a small model
"calls" the function it was asked to write) is recovered too: the tool node answers it with
the error that lists the real tools, and the loop goes on instead of ending on it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langchain_core.messages.tool import ToolCall

from atom_agent.telemetry import emit

from ._calls import last_reply, replaced

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_FENCED = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n\s*```", re.DOTALL)


def calls_in_text(text: str, tools: Iterable[str]) -> list[ToolCall]:
    """The tool calls written in `text` (empty: none, or not only calls; or no tools bound).

    `tools` are the bound tools' names: without any, nothing is a call.
    """
    names = set(tools)
    stripped = text.strip()
    if not stripped or not names:
        return []
    chunks = [m.group(1) for m in _TAGGED.finditer(stripped)]
    if not chunks:
        chunks = [m.group(1) for m in _FENCED.finditer(stripped)] or [stripped]
    calls: list[ToolCall] = []
    for chunk in chunks:
        call = _call(chunk, names)
        if call is None:
            return []  # a chunk that is not a call: the text is prose, not calls
        calls.append(call)
    return calls


def _call(chunk: str, names: set[str]) -> ToolCall | None:
    try:
        data = json.loads(chunk)
    except (TypeError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("function"), dict):
        data = data["function"]  # the OpenAI wire shape: {"type": "function", "function": …}
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return None
    if name not in names and not ({"arguments", "parameters"} & set(data)):
        return None  # {"name": ...} alone is data, not a call of an unknown tool
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):  # OpenAI's wire format: the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(
        name=str(data["name"]), args=args, id=f"call_{uuid.uuid4().hex[:12]}", type="tool_call"
    )


def _bound_names(request: ModelRequest[Any]) -> list[str]:
    names: list[str] = []
    for tool in request.tools or []:
        name = getattr(tool, "name", None)
        if name is None and isinstance(tool, dict):
            name = (tool.get("function") or tool).get("name")
        if isinstance(name, str):
            names.append(name)
    return names


class RecoverCalls(AgentMiddleware[AgentState[Any], Any, Any]):
    """Turn a reply whose text is nothing but tool calls of bound tools into those calls."""

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """The reply, with calls written as text made calls."""
        return self._recovered(request, handler(request))

    def _recovered(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelResponse[Any]:
        reply = last_reply(response)
        if reply is None or reply.tool_calls or not isinstance(reply.content, str | list):
            return response
        calls = calls_in_text(reply.text, _bound_names(request))
        if not calls:
            return response
        emit("executor.recovered_calls", calls=[c["name"] for c in calls])
        recovered = AIMessage(
            content="",
            tool_calls=calls,
            usage_metadata=reply.usage_metadata,
            response_metadata={**(reply.response_metadata or {}), "recovered_calls": len(calls)},
            id=reply.id,
        )
        return replaced(response, recovered)
