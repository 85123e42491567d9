"""The executor's tools: which of the plain tools an attempt's model gets, and ask_user."""

from __future__ import annotations

import json
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from atom_agent.errors import ConfigError
from atom_agent.prompts import prompt_text, register
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
