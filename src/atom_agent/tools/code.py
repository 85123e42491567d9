"""Code tools (run_python, run_tests): run the staging area's code in the sandbox runner."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, Field

from atom_agent.sandbox import Limits, RunResult
from atom_agent.tools.context import ToolRun, tool_context
from atom_agent.tools.results import structured_tool, to_json
from atom_agent.tools.scope import ToolScope

logger = logging.getLogger(__name__)

_MAX_ARGS = 32
_MAX_ARG_CHARS = 2000


class RunPythonArgs(BaseModel):
    """Arguments of run_python: the one tool schema not derived from its function.

    LangChain derives a schema through pydantic's ``validate_arguments``, which reserves a
    parameter named ``args`` (for ``*args``) and drops it: the model would never see it.
    """

    path: str = Field(description="Python file in your staging area, e.g. 'impl.py'.")
    args: list[str] = Field(
        default_factory=list, description="Command-line arguments for the script (sys.argv[1:])."
    )


def run_python(path: str, args: list[str] | None = None, *, runtime: ToolRun) -> str:
    """Run a Python file of your staging area in a sandbox and return its exit code and output.

    The working directory is your staging area; your files and your dependencies' files
    are importable. No network, limited time, CPU and memory; output is truncated in the
    middle when long. Use it to try your code; use run_tests for pytest.
    """
    context = tool_context(runtime)
    scope, runner, limits = context.need_scope(), context.need_runner(), context.limits
    argv = list(args or [])
    if len(argv) > _MAX_ARGS or any(len(a) > _MAX_ARG_CHARS for a in argv):
        raise ToolException(
            f"at most {_MAX_ARGS} arguments of up to {_MAX_ARG_CHARS} characters each"
        )
    target = _staging_file(scope, path)
    rel = target.relative_to(scope.staging.resolve()).as_posix()
    result = runner.run_python(
        rel, cwd=scope.staging, limits=limits, args=argv, python_path=scope.python_path()
    )
    return to_json(_report(result, limits, rel))


def run_tests(path: str | None = None, *, runtime: ToolRun) -> str:
    """Run pytest on your staging area (or one test file / node id) in a sandbox.

    Returns pass/fail/error/skip counts from pytest's own report, the exit code and the
    tail of pytest's output (failures are at the end). A run that ends before pytest
    writes its report (a test calling os._exit or exit, a crash, a kill) is a failure.
    Tests import your modules directly, e.g. `from impl import LRUCache`; dependency
    modules are importable too. No network, limited time and memory.

    Args:
        path: Test file, directory or node id in your staging area ('test.py',
            'test.py::test_get'); omit to run every test in the staging area.
        runtime: the run's context, injected by the agent (never sent by the model).
    """
    context = tool_context(runtime)
    scope, runner, limits = context.need_scope(), context.need_runner(), context.limits
    targets: list[str] = []
    if path:
        file_part, sep, node = path.partition("::")
        target = scope.resolve_write(file_part)
        if not target.exists():
            raise ToolException(
                f"{file_part!r} does not exist; write the test file first "
                f"or omit path to run all tests"
            )
        rel = target.relative_to(scope.staging.resolve()).as_posix() or "."
        targets.append(rel + sep + node)
    result = runner.run_pytest(
        cwd=scope.staging, limits=limits, targets=targets, python_path=scope.python_path()
    )
    return to_json(_report(result, limits, path or "."))


CODE_TOOLS: tuple[BaseTool, ...] = (
    structured_tool(run_python, RunPythonArgs),
    structured_tool(run_tests),
)
"""run_python and run_tests, in the run's sandbox ``runner`` under its ``limits``, in its scope.

A run that fails, crashes or hits a limit is a normal result (``ok: false`` with the exit
code, the reason and the output tail); only an unusable argument is an error result.
"""


def _staging_file(scope: ToolScope, path: str) -> Any:
    target = scope.resolve_write(path)
    if not target.is_file():
        raise ToolException(
            f"{path!r} is not a file in your staging area; write it first "
            f"(list_files shows what exists)"
        )
    return target


def summarize(result: RunResult, limits: Limits) -> str:
    """One line saying how the run ended, with the limit it hit, for the model."""
    limit = result.limit_hit
    if limit == "timeout":
        return (
            f"killed after the {limits.timeout_s:g}s time limit: the program ran too long "
            f"(an infinite loop, a blocking read, or waiting for network, which is off)"
        )
    if limit == "cpu":
        return f"killed by the CPU-time limit ({limits.cpu_s}s of CPU)"
    if limit == "memory" and result.oom_kills:
        return (
            f"{result.oom_kills} process(es) killed at the run's memory limit "
            f"({limits.memory_mb} MiB for all its processes together)"
        )
    if limit == "memory":
        return f"ran out of memory (limit {limits.memory_mb} MiB of address space)"
    if limit == "file_size":
        return f"tried to write a file larger than {limits.file_size_mb} MiB"
    if result.report_error:
        return result.report_error
    if result.signal is not None:
        return f"killed by {result.signal_name}"
    text = f"exit code {result.exit_code}"
    if result.tests is not None:
        t = result.tests
        text += f": {t.passed} passed, {t.failed} failed, {t.errors} errors, {t.skipped} skipped"
    return text


def _report(result: RunResult, limits: Limits, target: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "target": target,
        "ok": result.ok,
        "summary": summarize(result, limits),
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "limit_hit": result.limit_hit,
        "duration_s": round(result.duration_s, 3),
    }
    if result.notes:
        data["sandbox_notes"] = result.notes
    if result.tests is not None:
        data["tests"] = {
            "passed": result.tests.passed,
            "failed": result.tests.failed,
            "errors": result.tests.errors,
            "skipped": result.tests.skipped,
            "total": result.tests.total,
        }
    data["output"] = result.output
    if result.truncated:
        data["output_bytes"] = result.output_bytes
    return data
