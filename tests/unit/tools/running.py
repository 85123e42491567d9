"""Tool calls outside an agent, as an agent's tool node makes them (for tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool

from atom_agent.tools.calls import ToolResult, execute
from atom_agent.tools.context import ToolContext


def tool_runtime(
    context: ToolContext, call_id: str | None = None, tools: Sequence[BaseTool] = ()
) -> ToolRuntime[ToolContext, dict[str, Any]]:
    """The ``runtime`` an agent's tool node injects into a call of a run with `context`."""
    return ToolRuntime(
        state={},
        context=context,
        config={},
        stream_writer=lambda _: None,
        tool_call_id=call_id,
        store=None,
        tools=list(tools),
    )


def run_tool(
    tools: Sequence[BaseTool], call: Mapping[str, Any], context: ToolContext
) -> ToolResult:
    """Run one tool call (``{"name", "args", "id"}``) outside an agent, as an agent would.

    The same checks, telemetry and error results as the ``ToolCalls`` middleware; `context`
    is what the agent's run would pass as ``context=``.
    """
    known = {t.name: t for t in tools}
    call_id = str(call.get("id") or "") if isinstance(call, Mapping) else ""

    def invoke(tool: BaseTool, args: dict[str, Any]) -> Any:
        runtime = tool_runtime(context, call_id, tools)
        message: dict[str, Any] = {"type": "tool_call", "name": tool.name, "id": call_id}
        message["args"] = {**args, "runtime": runtime}
        return tool.invoke(message)

    return execute(call, context, known, invoke)
