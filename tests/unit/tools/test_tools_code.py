"""Code tools: real sandboxed runs of the staging area's python files and tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from atom_agent.context import Context
from atom_agent.sandbox import Limits, default_runner
from atom_agent.session import SessionContext
from atom_agent.tools.code import CODE_TOOLS
from atom_agent.tools.context import ToolContext
from atom_agent.tools.scope import ToolScope

Call = Callable[..., tuple[str, dict[str, Any]]]


@pytest.fixture
def context(scope: ToolScope, session: SessionContext) -> ToolContext:
    limits = Limits(timeout_s=20.0, cpu_s=10, memory_mb=512, output_bytes=4096)
    return ToolContext(session=session, scope=scope, runner=default_runner(), limits=limits)


@pytest.fixture
def tools(by_name: Callable[[list[BaseTool]], dict[str, BaseTool]]) -> dict[str, BaseTool]:
    return by_name(list(CODE_TOOLS))


def test_run_python_with_args_and_dependency_imports(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    (area["staging"] / "impl.py").write_text(
        "import sys\nfrom base import base\nprint(base(), sys.argv[1:])\n"
    )
    status, out = call(tools["run_python"], path="impl.py", args=["--n", "3"])
    assert status == "success"
    assert out["ok"] is True and out["exit_code"] == 0 and out["summary"] == "exit code 0"
    assert out["output"] == "base ['--n', '3']\n"


def test_a_failing_program_is_a_normal_result(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    (area["staging"] / "bad.py").write_text("raise ValueError('wrong answer')\n")
    status, out = call(tools["run_python"], path="bad.py")
    assert status == "success"  # the tool worked; the program failed
    assert out["ok"] is False and out["exit_code"] == 1 and "wrong answer" in out["output"]


def test_timeouts_are_explained(
    context: ToolContext, tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    (area["staging"] / "hang.py").write_text("while True:\n    pass\n")
    quick = ToolContext(
        session=context.session,
        scope=context.scope,
        runner=context.runner,
        limits=Limits(timeout_s=1.0),
    )
    status, out = call(tools["run_python"], quick, path="hang.py")
    assert status == "success" and out["ok"] is False and out["timed_out"] is True
    assert out["limit_hit"] == "timeout" and "time limit" in out["summary"]


def test_run_python_refusals(tools: dict[str, BaseTool], call: Call) -> None:
    status, out = call(tools["run_python"], path="missing.py")
    assert status == "error" and "write it first" in out["error"]
    status, out = call(tools["run_python"], path="../outside/secret.txt")
    assert status == "error" and "'..'" in out["error"]
    status, out = call(tools["run_python"], path="/usr/bin/python3")
    assert status == "error" and "absolute" in out["error"]
    status, out = call(tools["run_python"], path="deps/base/base.py")
    assert status == "error" and "read-only" in out["error"]


def test_run_tests_counts_and_targets(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    staging = area["staging"]
    (staging / "impl.py").write_text("def add(a, b):\n    return a + b\n")
    (staging / "test_impl.py").write_text(
        "from impl import add\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n\n"
        "def test_wrong():\n    assert add(2, 2) == 5\n"
    )
    status, out = call(tools["run_tests"])
    assert status == "success" and out["ok"] is False
    assert out["tests"] == {"passed": 1, "failed": 1, "errors": 0, "skipped": 0, "total": 2}
    assert out["summary"] == "exit code 1: 1 passed, 1 failed, 0 errors, 0 skipped"
    assert "test_wrong" in out["output"]
    status, out = call(tools["run_tests"], path="test_impl.py::test_add")
    assert out["ok"] is True and out["tests"]["passed"] == 1 and out["tests"]["total"] == 1
    status, out = call(tools["run_tests"], path="test_missing.py")
    assert status == "error" and "does not exist" in out["error"]
    status, out = call(tools["run_tests"], path="../x.py")
    assert status == "error"


def test_limits_from_context() -> None:
    ctx = Context(
        sandbox_timeout_s=7.5,
        sandbox_cpu_s=3,
        sandbox_memory_mb=300,
        sandbox_output_bytes=2048,
        sandbox_network=True,
    )
    limits = Limits.from_context(ctx)
    assert (
        limits.timeout_s,
        limits.cpu_s,
        limits.memory_mb,
        limits.output_bytes,
        limits.network,
    ) == (7.5, 3, 300, 2048, True)


def test_run_tests_that_die_before_reporting_fail(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    staging = area["staging"]
    (staging / "test_exit.py").write_text(
        "import os\n\ndef test_ok():\n    pass\n\n"
        "def test_exit():\n    print('5 passed in 0.1s')\n    os._exit(0)\n"
    )
    status, out = call(tools["run_tests"], path="test_exit.py")
    assert status == "success" and out["ok"] is False and out["exit_code"] == 0
    assert out["summary"].startswith("pytest died before reporting: exit code 0")
    assert "tests" not in out
