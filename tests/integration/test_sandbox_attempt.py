"""One executor attempt end to end on real parts: workspace tree, routed tools, a ReAct agent,
real sandboxed pytest runs, history.json and an atomic commit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage

from atom_agent.memory import MemoryManager
from atom_agent.sandbox import Limits, default_runner
from atom_agent.session import SessionContext
from atom_agent.testing import ScriptedChatModel, tool_call
from atom_agent.tools.calls import ToolCalls
from atom_agent.tools.code import CODE_TOOLS
from atom_agent.tools.context import ToolContext
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.memory import MEMORY_TOOLS
from atom_agent.tools.scope import ToolScope
from atom_agent.tools.search import SEARCH_TOOLS
from atom_agent.workspace import Workspace
from atom_agent.workspace._commit import current_attempt

pytestmark = pytest.mark.integration

BASE = "def normalize(key):\n    return str(key).strip().lower()\n"
IMPL = (
    "from collections import OrderedDict\n\nfrom keys import normalize\n\n\n"
    "class LRUCache:\n"
    "    def __init__(self, capacity):\n"
    "        self.capacity = capacity\n"
    "        self.data = OrderedDict()\n\n"
    "    def get(self, key):\n"
    "        key = normalize(key)\n"
    "        if key not in self.data:\n"
    "            return None\n"
    "        self.data.move_to_end(key)\n"
    "        return self.data[key]\n\n"
    "    def put(self, key, value):\n"
    "        key = normalize(key)\n"
    "        self.data[key] = value\n"
    "        self.data.move_to_end(key)\n"
    "        while len(self.data) > self.capacity:\n"
    "            self.data.popitem(last=False)\n"
)
TEST = (
    "from impl import LRUCache\n\n\n"
    "def test_evicts_least_recently_used():\n"
    "    cache = LRUCache(2)\n"
    "    cache.put('a', 1)\n"
    "    cache.put('b', 2)\n"
    "    cache.get('a')\n"
    "    cache.put('c', 3)\n"
    "    assert cache.get('b') is None and cache.get('a') == 1\n\n\n"
    "def test_keys_are_normalized():\n"
    "    cache = LRUCache(1)\n"
    "    cache.put(' A ', 1)\n"
    "    assert cache.get('a') == 1\n"
)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


@pytest.fixture
def manager(ws: Workspace) -> Iterator[MemoryManager]:
    with MemoryManager.open(ws.root) as memory:
        yield memory


def test_one_attempt_from_tools_to_commit(ws: Workspace, manager: MemoryManager) -> None:
    run = ws.create_run("run-1", task="an LRU cache with normalized keys")
    base = ws.create_step(run, "keys")
    first = ws.new_attempt(base)
    (first.staging / "keys.py").write_text(BASE)
    ws.commit(base, first)

    step = ws.create_step(run, "cache", depends_on=["keys"])
    attempt = ws.new_attempt(step)
    scope = ToolScope.for_attempt(ws, step, attempt)
    session = SessionContext(
        session_id="sess",
        project_id="demo",
        run_id=run.run_id,
        step_id=step.step_id,
        attempt=attempt.n,
    )
    limits = Limits(timeout_s=30.0, cpu_s=20, memory_mb=768)
    context = ToolContext(
        session=session, scope=scope, runner=default_runner(), limits=limits, memory=manager
    )

    model = ScriptedChatModel(
        responses=[
            tool_call("read_file", {"path": "deps/keys/keys.py"}, id="t1"),
            tool_call("write_file", {"path": "impl.py", "content": IMPL}, id="t2"),
            tool_call("write_file", {"path": "test.py", "content": TEST}, id="t3"),
            tool_call("run_tests", {}, id="t4"),
            tool_call(
                "remember",
                {"content": "cache keys are normalized with keys.normalize", "type": "convention"},
                id="t5",
            ),
            "impl.py and test.py are written; 2 tests pass.",
        ]
    )
    agent = create_agent(
        model,
        tools=[*FILE_TOOLS, *CODE_TOOLS, *SEARCH_TOOLS, *MEMORY_TOOLS],
        system_prompt=scope.describe(),
        middleware=[ToolCalls()],
        context_schema=ToolContext,
    )
    state = agent.invoke({"messages": [("user", "Implement the LRU cache step.")]}, context=context)

    results = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert all(m.status == "success" for m in results.values()), results
    assert json.loads(str(results["t1"].content))["content"] == BASE
    tests = json.loads(str(results["t4"].content))
    assert tests["ok"] is True
    assert tests["tests"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0, "total": 2}

    # The reflector's evidence, on real parts: an independent test run.
    verdict = default_runner().run_pytest(
        cwd=attempt.staging, limits=limits, python_path=scope.python_path()
    )
    assert verdict.ok
    ws.write_verdict(attempt, {"passed": True, "tests": tests["tests"]})
    ws.write_history(attempt, state["messages"])
    ws.commit(step, attempt)
    ws.update_step(step, status="committed")

    history = ws.read_history(attempt)
    assert [m["type"] for m in history][:2] == ["human", "ai"]  # system prompt is not state
    calls = [c["id"] for m in history if m["type"] == "ai" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in history if m["type"] == "tool"]
    assert calls == answered == ["t1", "t2", "t3", "t4", "t5"]
    assert "usage_metadata" not in json.dumps(history)
    assert (step.artifacts / "impl.py").read_text() == IMPL
    assert current_attempt(step.committed_dir) == 1
    assert manager.recall(session, "how are cache keys normalized")[0].run_id == "run-1"
