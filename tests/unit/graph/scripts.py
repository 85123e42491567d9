"""Scripted planner / executor models for end-to-end graph tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from atom_agent.models.purpose import CallInfo
from atom_agent.state import Plan, PlanStep
from atom_agent.testing import ScriptedChatModel, tool_call

ADD_IMPL = "def add(a, b):\n    return a + b\n"
ADD_TEST = "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BAD_TEST = "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 6\n"


def step(
    step_id: str,
    depends_on: Sequence[str] = (),
    criteria: Sequence[str] = ("add(2, 3) == 5",),
    defines: Sequence[str] | None = None,
) -> PlanStep:
    return PlanStep(
        id=step_id,
        title=f"Step {step_id}",
        description=f"Implement {step_id}.",
        acceptance_criteria=list(criteria),
        depends_on=list(depends_on),
        # Each scripted step adds its own name, so plans of several steps stay valid.
        defines=list(defines) if defines is not None else [f"{step_id.replace('-', '_')}_api"],
    )


def write(path: str, content: str) -> AIMessage:
    return tool_call("write_file", {"path": path, "content": content})


def read(path: str) -> AIMessage:
    return tool_call("read_file", {"path": path})


def run_tests() -> AIMessage:
    return tool_call("run_tests", {})


def passing_attempt(impl: str = ADD_IMPL, test: str = ADD_TEST) -> list[AIMessage]:
    """Write impl.py and test.py, run the tests (the loop stops when they pass)."""
    return [write("impl.py", impl), write("test.py", test), run_tests()]


def failing_attempt() -> list[AIMessage]:
    """Tests that fail; then the executor (wrongly) claims success."""
    return [
        write("impl.py", ADD_IMPL),
        write("test.py", BAD_TEST),
        run_tests(),
        AIMessage(content="Done, everything works."),
    ]


Script = dict[tuple[str, int], list[AIMessage]]
WHOLE_TASK = ("plain", "task_sample")
"""Calls for the whole task (candidate zero and its samples), not for a step's attempt."""


class ExecutorScript:
    """Replies chosen by the call's (step id, attempt number), and the turn index.

    What a call is for comes from its metadata (:class:`CallInfo`), never from its prompt: a
    call for the whole task gets `plain`; any other call of an attempt (draft, witness, a turn
    of the tool loop) gets the attempt's next scripted reply.
    """

    def __init__(
        self,
        script: Script,
        default: Callable[[], list[AIMessage]] | None = None,
        plain: str = "",
    ):
        self.script = script
        self.default = default
        self.plain = plain
        self.prompts: dict[tuple[str, int], str] = {}

    def __call__(self, messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose in WHOLE_TASK:
            return AIMessage(content=self.plain)  # candidate zero: no code unless scripted
        assert info.step and info.attempt, f"a call of no attempt: {info}"
        key = (info.step, info.attempt)
        first = next(m for m in messages if isinstance(m, HumanMessage))
        self.prompts[key] = str(first.content)
        replies = self.script.get(key) or (self.default() if self.default else [])
        turn = sum(1 for m in messages if isinstance(m, AIMessage))
        if turn >= len(replies):
            return AIMessage(content="Finished.")
        return replies[turn]


def models(
    plans: Sequence[Plan | AIMessage],
    executor: ExecutorScript,
    **kwargs: Any,
) -> dict[str, ScriptedChatModel]:
    """One scripted model per role (planner and executor)."""
    return {
        "planner": planner_model(plans, **kwargs),
        "executor": ScriptedChatModel(respond=executor, **kwargs),
    }


def planner_model(
    plans: Sequence[Plan | AIMessage],
    contracts: Sequence[str] = (),
    *,
    cycle: bool = False,
    **kwargs: Any,
) -> ScriptedChatModel:
    """Plans in turn for planning calls; `contracts` (test code) in turn for contract calls.

    A contract call beyond `contracts` gets a reply without asserts: the step keeps no checks
    and is proved by its tests, as before contracts existed. With `cycle`, the plans repeat.
    """
    queue, tests = list(plans), list(contracts)

    def respond(messages: list[BaseMessage], info: CallInfo) -> Any:
        if info.purpose == "contract":
            code = tests.pop(0) if tests else "# no asserts\n"
            return AIMessage(content=f"```python\n{code}```")
        if not queue and cycle:
            queue.extend(plans)
        if not queue:
            raise AssertionError("the planner was asked for more plans than scripted")
        reply = queue.pop(0)
        # The planner model answers in the ProposedPlan schema; checks it adds are kept.
        return tool_call("ProposedPlan", reply.model_dump()) if isinstance(reply, Plan) else reply

    return ScriptedChatModel(respond=respond, **kwargs)
