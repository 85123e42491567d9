"""Unit-suite settings: the tests that start real processes carry the ``processes`` marker.

``pytest tests/unit -m "not processes"`` (``make pure``) runs the pure unit tests alone, in
seconds. A module is listed here when one of its tests starts a process: the sandbox (every
graph run, every check), a CLI subprocess, a server (measured by recording ``subprocess.Popen``
and ``os.fork`` over the whole suite). A new module that starts one belongs here too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

STARTS_PROCESSES = frozenset(
    {
        "batch/test_batch.py",
        "batch/test_batch_budget.py",
        "batch/test_replay.py",
        "benchmarks/test_candidate_ceiling.py",
        "test_heldout_oracle.py",
        "test_heldout_streams_oracle.py",
        "benchmarks/test_generation_ceiling.py",
        "benchmarks/test_repotasks_eval.py",
        "checks/test_contract.py",
        "verification/test_standing.py",
        "selection/test_write_drafts.py",
        "graph/test_project_rules.py",
        "checks/test_probe.py",
        "cli/test_errors.py",
        "cli/test_exit.py",
        "cli/test_models.py",
        "cli/test_runs_calls.py",
        "cli/test_startup.py",
        "evals/test_humaneval.py",
        "graph/test_broken_calls.py",
        "graph/test_budget_calls.py",
        "graph/test_calls_alongside.py",
        "graph/test_dependencies_imported.py",
        "graph/test_budgets_and_shape.py",
        "graph/test_calls_end.py",
        "graph/test_candidate_zero.py",
        "graph/test_cli_run.py",
        "graph/test_context_precedence.py",
        "graph/test_context_window.py",
        "graph/test_deliverable.py",
        "graph/test_end_to_end.py",
        "graph/test_gaming_run.py",
        "graph/test_hostile_calls.py",
        "graph/test_inputs.py",
        "graph/test_keyed_on_structure.py",
        "graph/test_learning.py",
        "graph/test_loops.py",
        "graph/test_memory_flow.py",
        "graph/test_outcome.py",
        "graph/test_own_tests.py",
        "graph/test_prompt_override.py",
        "graph/test_recorded_exchanges.py",
        "graph/test_resume_payloads.py",
        "graph/test_reuse.py",
        "graph/test_tool_loop_start.py",
        "graph/test_verification.py",
        "memory/test_hybrid.py",
        "memory/test_store_open.py",
        "models/test_call_budget.py",
        "project/test_checkout.py",
        "project/test_project_rules.py",
        "project/test_checks.py",
        "project/test_environment.py",
        "project/test_instances.py",
        "project/test_project_crash.py",
        "project/test_project_memory.py",
        "project/test_project_run.py",
        "project/test_suite.py",
        "sandbox/test_sandbox_boundary.py",
        "sandbox/test_sandbox_choice.py",
        "sandbox/test_sandbox_pytest.py",
        "sandbox/test_sandbox_runner.py",
        "test_checkpointer.py",
        "test_environment_disk_full.py",
        "test_layers.py",
        "test_locks.py",
        "test_run_checks.py",
        "test_server_graph.py",
        "tools/test_confinement_race.py",
        "tools/test_tool_calls.py",
        "tools/test_tools_code.py",
        "verification/test_clauses.py",
        "verification/test_conditions.py",
        "verification/test_outcomes.py",
        "verification/test_rules.py",
        "verification/test_typed.py",
        "workspace/test_deliverable_tree.py",
        "workspace/test_tree_resume_files.py",
        "workspace/test_workspace_history_atomic.py",
    }
)
"""Modules (relative to tests/unit/) with a test that starts a real process."""

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of a module in :data:`STARTS_PROCESSES` with ``processes``."""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(_HERE) and path.relative_to(_HERE).as_posix() in STARTS_PROCESSES:
            item.add_marker(pytest.mark.processes)


class StartedAProcessError(AssertionError):
    """A test outside :data:`STARTS_PROCESSES` started a process."""


@pytest.fixture(autouse=True)
def _pure_tests_start_no_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A test not marked ``processes`` that starts one fails, naming the list to put it in.

    So the list cannot fall behind: ``make pure`` stays pure, and a newcomer's new test that
    runs the sandbox or a CLI is told where it belongs.
    """
    if request.node.get_closest_marker("processes") is not None:
        yield
        return
    where = request.node.nodeid

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise StartedAProcessError(
            f"{where} starts a process: add its module to STARTS_PROCESSES in "
            "tests/unit/conftest.py (it is then left out of `make pure`)"
        )

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    yield
