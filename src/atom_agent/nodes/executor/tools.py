"""The executor's tools: which of the plain tools an attempt's model gets, and ask_user."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import Field

from atom_agent.errors import ConfigError
from atom_agent.prompts import prompt_text, register
from atom_agent.telemetry import emit
from atom_agent.tools.code import CODE_TOOLS
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.memory import MEMORY_TOOLS
from atom_agent.tools.search import SEARCH_TOOLS

from .attempt import ASK_USER

ASK_USER_DESCRIPTION = register(
    "ASK_USER_DESCRIPTION",
    "Ask the user ONE precise question when the task is ambiguous and you "
    "cannot decide yourself. The run pauses until the user answers; use it rarely.",
)
"""The ask_user tool's manual (the model reads it)."""

ASK_USER_WAIT = register("ASK_USER_WAIT", "wait for the answer")
"""ask_user's result note."""


def _ask_user(question: Annotated[str, Field(min_length=3)]) -> str:
    """Record the question; the graph's ask_user node puts it to the user.

    Args:
        question: one precise question for the user
    """
    return json.dumps(
        {"status": "asked", "question": question, "note": prompt_text("ASK_USER_WAIT")}
    )


ASK_USER_TOOL: BaseTool = StructuredTool.from_function(
    func=_ask_user,
    name=ASK_USER,
    description=ASK_USER_DESCRIPTION,
    parse_docstring=True,
    error_on_invalid_docstring=True,
)
"""The tool the executor calls when only the user can resolve an ambiguity (stateless)."""


def ask_user_tool() -> BaseTool:
    """:data:`ASK_USER_TOOL` with the run's description (the user's replacement, if any)."""
    description = prompt_text("ASK_USER_DESCRIPTION")
    if description == ASK_USER_TOOL.description:
        return ASK_USER_TOOL
    return ASK_USER_TOOL.model_copy(update={"description": description})


EXECUTOR_TOOLS: tuple[BaseTool, ...] = (
    *FILE_TOOLS,
    *CODE_TOOLS,
    *SEARCH_TOOLS,
    ASK_USER_TOOL,
    *MEMORY_TOOLS,
)
"""Every tool an executor may get, in the order the model sees them."""


def executor_tools(setting: str, *, ask_user: bool = True) -> list[BaseTool]:
    """The tools of the executor for ``Context.executor_tools`` (see its docstring).

    Without `ask_user` (nobody answers this run's questions) the question tool is never
    offered, whatever the setting names.

    Raises:
        ConfigError: the setting names a tool that does not exist.
    """
    available = {t.name for t in EXECUTOR_TOOLS}
    chosen = {n.strip() for n in setting.split(",") if n.strip()}
    if setting.strip() in ("", "all"):
        chosen = set(available)
    unknown = chosen - available
    if unknown:
        raise ConfigError(
            f"executor_tools: unknown tool(s) {sorted(unknown)}; available: {sorted(available)}"
        )
    if not ask_user:
        chosen.discard(ASK_USER)
    return [t for t in EXECUTOR_TOOLS if t.name in chosen]


NOBODY_ANSWERS = (
    "Nobody answers questions in this run: decide yourself, state what you assumed in a "
    "comment in impl.py, and go on with the step."
)
"""What an ask_user call gets when the tool is not offered (an unattended run)."""


class NoQuestions(AgentMiddleware[Any, Any, Any]):
    """In an unattended run, an ask_user call (offered or not) is answered: decide yourself.

    A small model calls ask_user although it was not offered (or writes the call as text,
    which the loop recovers as a call); a generic "unknown tool" error would leave it asking
    again. The reply is an error result, so the attempt goes on and never ends on a question.
    """

    def _reply(self, request: ToolCallRequest) -> ToolMessage | None:
        call = request.tool_call
        if call.get("name") != ASK_USER:
            return None
        question = str((call.get("args") or {}).get("question") or "")[:300]
        emit("executor.unanswered_question", question=question)
        return ToolMessage(
            content=json.dumps({"error": NOBODY_ANSWERS}),
            tool_call_id=str(call.get("id") or ""),
            name=ASK_USER,
            status="error",
        )

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """The decide-yourself reply for ask_user; any other call as it was."""
        return self._reply(request) or handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async :meth:`wrap_tool_call`."""
        return self._reply(request) or await handler(request)
