"""What the project nodes share: the run's checkout, test command and baseline, read back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atom_agent.checks.contract import ContractReport, run_contract
from atom_agent.project.checkout import Checkout
from atom_agent.project.repomap import Definition
from atom_agent.project.suite import SuiteResult
from atom_agent.project.suite_command import TestCommand
from atom_agent.resources import Resources
from atom_agent.state import Check, PlanStep
from atom_agent.workspace import RunRef
from atom_agent.workspace.atomic import atomic_write_json

BASELINE_FILE = "baseline.json"
"""The project's test suite before any change: ``runs/<id>/baseline.json``."""


@dataclass(frozen=True)
class ProjectRun:
    """A project run's checkout, how its tests run, and which passed before any change."""

    checkout: Checkout
    command: TestCommand
    baseline: SuiteResult
    packages: tuple[str, ...] = ()
    """The project's declared dependencies installed here: importable in the sandbox."""
    missing: tuple[str, ...] = ()
    """Declared dependencies not installed here (reported, never installed)."""
    reused: bool = False
    """The baseline is an earlier run's on the same tree (not run again)."""

    def python_path(self) -> list[Path]:
        """The project's import roots inside the checkout."""
        return [self.checkout.root / p for p in self.command.python_path]


def save_project(res: Resources, run: RunRef, project: ProjectRun) -> None:
    """Records the checkout in run.json and the baseline in baseline.json."""
    atomic_write_json(
        run.path / BASELINE_FILE,
        {
            "command": project.command.__dict__,
            "suite": project.baseline.to_dict(),
            "packages": list(project.packages),
            "missing": list(project.missing),
            "reused": project.reused,
        },
    )
    res.workspace.update_run(run, project=project.checkout.to_dict())


def load_project(res: Resources, run: RunRef) -> ProjectRun | None:
    """The project run the planner recorded, or None before it did."""
    data = res.workspace.read_run(run).get("project")
    path = run.path / BASELINE_FILE
    if not data or not path.is_file():
        return None
    saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return ProjectRun(
        Checkout.from_dict(data),
        TestCommand(**saved["command"]),
        SuiteResult.from_dict(saved["suite"]),
        tuple(saved.get("packages") or ()),
        tuple(saved.get("missing") or ()),
        bool(saved.get("reused")),
    )


def target_of(defs: list[Definition], step: PlanStep) -> Definition | None:
    """The definition a step changes (None for a name its file does not define)."""
    path, _, qualname = step.target.partition("::")
    return next((d for d in defs if d.path == path and d.qualname == qualname), None)


def module_of(path: str, python_path: list[str]) -> str:
    """The dotted module of a file path relative to the project root."""
    parts = Path(path).with_suffix("").parts
    for root in python_path:
        prefix = Path(root).parts if root not in (".", "") else ()
        if parts[: len(prefix)] == prefix:
            parts = parts[len(prefix) :]
            break
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def checks_in_checkout(
    res: Resources, project: ProjectRun, checks: list[Check], module: str
) -> ContractReport:
    """`checks` run against the checkout as it now is, the checkout reset after."""
    try:
        return run_contract(
            checks,
            staging=project.checkout.root,
            runner=res.runner.with_packages(project.packages),
            limits=res.limits,
            python_path=project.python_path(),
            module=module,
        )
    finally:
        project.checkout.reset()
