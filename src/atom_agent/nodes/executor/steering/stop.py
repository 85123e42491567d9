"""When an attempt ends: its tool budget is spent, its tests pass with its files, or it asked."""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime

from ..attempt import ASK_USER, attempt_of, tests_passed


class StopAttempt(AgentMiddleware[AgentState[Any], Any, Any]):
    """Code, not the model, decides when an attempt stops.

    Small models rarely stop by themselves; without this the loop runs to the recursion limit.
    It holds nothing of one attempt: the budget and the files come from the run's context.
    """

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the loop before the next model call when the attempt is over."""
        attempt = attempt_of(runtime)
        messages = state["messages"]
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if len(results) >= attempt.max_tool_calls:
            return {"jump_to": "end"}
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            if last.name == ASK_USER and last.status != "error":
                return {"jump_to": "end"}
            if (
                last.name == "run_tests"
                and tests_passed(str(last.content))
                and attempt.files_written()
            ):
                return {"jump_to": "end"}
        return None
