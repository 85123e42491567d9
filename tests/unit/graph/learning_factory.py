"""Scripted runs that learn, for in-process tests and CLI subprocesses.

``ATOM_MODELS_FACTORY=tests.unit.graph.learning_factory:learns_everything``. With
``ATOM_TEST_WRITES=<file>`` every side-effecting write of the reflector and finish nodes is
logged there (one line each, across processes); with ``ATOM_TEST_KILL_AT=N`` as well, the
process SIGKILLs itself right after the N-th write returned (or the first write of that name,
as logged: ``finish apply``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.memory import MemoryManager
from atom_agent.models.purpose import CallInfo
from atom_agent.state import Check, Plan, PlanStep
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.workspace import Workspace

from .scripts import ADD_TEST, ExecutorScript, Script, models, planner_model, run_tests, write

RIGHT = 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n'
WRONG = "def add(a, b):\n    return a - b\n"
ADD_CHECK = Check(call="add(2, 3)", expect="5", criterion="add(2, 3) == 5")
FAILURE = "check `add(2, 3) == 5` expected 5, got -1"
"""What the failure lesson of `wrong_attempt` says (with the step's contract check)."""
QUESTION = "Integers only, or floats too?"
ANSWER = "integers only"


def adder_step(
    step_id: str = "adder",
    title: str = "add two numbers",
    description: str = "Implement add(a, b), the sum of two numbers.",
    criteria: tuple[str, ...] = ("add(2, 3) == 5",),
    checks: bool = True,
) -> PlanStep:
    """A step defining ``add``, proved by a contract check (or, without, by its tests)."""
    return PlanStep(
        id=step_id,
        title=title,
        description=description,
        acceptance_criteria=list(criteria),
        defines=["add"],
        checks=[ADD_CHECK] if checks else [],
    )


def wrong_attempt() -> list[AIMessage]:
    """Code that subtracts: the contract check and the tests fail."""
    return [write("impl.py", WRONG), write("test.py", ADD_TEST), run_tests(), AIMessage("Done.")]


def right_attempt() -> list[AIMessage]:
    """Code that adds, with a docstring."""
    return [write("impl.py", RIGHT), write("test.py", ADD_TEST), run_tests()]


CODE_CALLS = ("plain", "task_sample", "draft", "witness")
"""Calls for code in one block: the plain answer, a witness, a small model's drafts."""


def with_witnesses(script: ExecutorScript) -> Callable[[list[BaseMessage], CallInfo], AIMessage]:
    """The executor: tool-loop calls follow `script`; draft calls get the right code."""

    def respond(messages: list[BaseMessage], info: CallInfo) -> AIMessage:
        if info.purpose in CODE_CALLS:
            return AIMessage(content=f"```python\n{RIGHT}```")
        return script(messages, info)

    return respond


def roles(plan: Plan, script: Script) -> tuple[dict[str, ScriptedChatModel], ExecutorScript]:
    """Scripted roles for `plan`: the executor follows `script`, code calls get RIGHT."""
    executor = ExecutorScript(script)
    out = models([plan], executor)
    out["planner"] = planner_model([plan])
    out["executor"] = ScriptedChatModel(respond=with_witnesses(executor))
    return out, executor


def learns_everything() -> dict[str, ScriptedChatModel]:
    """One step: attempt 1 fails its tests, attempt 2 asks the user, attempt 3 passes.

    The run writes a failure lesson (from the failing tests), the step's interface and the
    user's decision. No contract: the reflector proves the step by its tests, so the many
    runs of the crash test stay cheap.
    """
    _arm_kill_points()
    step = adder_step(criteria=("add(2, 3) == 5", "add has a docstring"), checks=False)
    out, _ = roles(
        Plan(steps=[step]),
        {
            ("adder", 1): wrong_attempt(),
            ("adder", 2): [tool_call("ask_user", {"question": QUESTION})],
            ("adder", 3): right_attempt(),
        },
    )
    return out


def one_step() -> dict[str, ScriptedChatModel]:
    """A demo-like run: one step that passes at once."""
    _arm_kill_points()
    step = adder_step(criteria=("add(2, 3) == 5", "add has a docstring"))  # one unverified
    out, _ = roles(Plan(steps=[step]), {("adder", 1): right_attempt()})
    return out


def fails_once() -> dict[str, ScriptedChatModel]:
    """One step: attempt 1 fails its contract check (the lesson FAILURE), attempt 2 passes.

    The run writes a failure lesson and the step's interface. Run it without candidate zero
    (``ATOM_CANDIDATE_ZERO=false``): the plain answer is right and would pass attempt 1.
    """
    _arm_kill_points()
    script = {("adder", 1): wrong_attempt(), ("adder", 2): right_attempt()}
    out, _ = roles(Plan(steps=[adder_step()]), script)
    return out


# --- kill points ---------------------------------------------------------------------------------

WRITES: list[tuple[type, str]] = [
    (MemoryManager, "apply"),  # remember_once, forget, reinforce and contradict go through it
    (MemoryManager, "remember_many"),
    (Workspace, "write_verdict"),
    (Workspace, "commit"),
    (Workspace, "update_step"),
    (Workspace, "update_run"),
    (Workspace, "write_report"),
]
"""Every side-effecting write the reflector and finish nodes make (memory and workspace)."""
_NODES = {
    "reflector": ("nodes/reflector/node.py", "reflector"),
    "finish": ("nodes/finish.py", "finish"),
    "_learn": ("nodes/finish.py", "finish"),  # the finish node's memory write, in its own thread
}
_ORIGINALS: dict[tuple[type, str], Any] = {}


class Crash(BaseException):
    """A process death, in-process: raised right after a write returned (nothing catches it)."""


def _node() -> str | None:
    """The graph node (reflector or finish) this call is made from, if any."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        where = _NODES.get(code.co_name)
        if where is not None and code.co_filename.endswith(where[0]):
            return where[1]
        frame = frame.f_back  # type: ignore[assignment]
    return None


def arm(log: Path, kill_at: int | str, die: Callable[[], None]) -> None:
    """Log each reflector/finish write to `log`; call `die` right after the `kill_at`-th.

    `kill_at` may also name a write as logged ("finish apply"): `die` after its first one.
    """
    disarm()
    for owner, name in WRITES:
        original = getattr(owner, name)
        _ORIGINALS[(owner, name)] = original

        def logged(*args: Any, _original: Any = original, _name: str = name, **kw: Any) -> Any:
            out = _original(*args, **kw)
            node = _node()
            if node is not None:
                with open(log, "a", encoding="utf-8") as handle:
                    handle.write(f"{node} {_name}\n")
                lines = log.read_text(encoding="utf-8").splitlines()
                if len(lines) == kill_at or (lines[-1] == kill_at and lines.count(kill_at) == 1):
                    die()
            return out

        setattr(owner, name, logged)


def disarm() -> None:
    """Put the original methods back."""
    for (owner, name), original in _ORIGINALS.items():
        setattr(owner, name, original)
    _ORIGINALS.clear()


def _sigkill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm_kill_points() -> None:
    log = os.environ.get("ATOM_TEST_WRITES")
    if log:
        at = os.environ.get("ATOM_TEST_KILL_AT", "0")
        arm(Path(log), int(at) if at.isdigit() else at, _sigkill)
