"""What a run learns about a project, kept for the next run on it.

Two kinds: a **baseline** of its test suite at one tree (the tree's git hash, the command and
the interpreter make the key; a run on the same tree reuses it instead of running the whole
suite again: the gate reruns every suspected regression anyway), and **long-term memories**
in the project's memory space: where the definitions the runs changed live. The memory space
is ``Context.project_id``, or one derived from the project's path when that is left at
``default``, so runs on different projects never read each other's notes.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from atom_agent.memory.idempotent import remember_once
from atom_agent.memory.manager import MemoryManager
from atom_agent.project.checkout import Checkout, git
from atom_agent.project.suite import SuiteResult
from atom_agent.project.suite_command import TestCommand
from atom_agent.session import SessionContext
from atom_agent.workspace.atomic import atomic_write_json

PROJECTS_DIR = "projects"
"""``<workspace>/projects/<project>/baselines/<key>.json``: suite baselines by tree."""


def project_space(project_id: str, repo: str) -> str:
    """The memory project of a run on `repo`: the given one, or one named after the project."""
    if project_id != "default":
        return project_id
    root = Path(repo).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.")[:40] or "project"
    return f"repo-{name}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}"


def baseline_key(checkout: Checkout, command: TestCommand, packages: tuple[str, ...]) -> str:
    """What a baseline depends on: the tree at the base commit, the command, the interpreter."""
    tree = git(Path(checkout.worktree), "rev-parse", f"{checkout.base}^{{tree}}").strip()
    parts = json.dumps([tree, checkout.subdir, command.argv[1:], command.python_path,
                        list(packages), sys.version])  # fmt: skip
    return hashlib.sha256(parts.encode()).hexdigest()[:32]


def _baseline_path(workspace: Path, space: str, key: str) -> Path:
    return workspace / PROJECTS_DIR / space / "baselines" / f"{key}.json"


def known_baseline(workspace: Path, space: str, key: str) -> SuiteResult | None:
    """The baseline an earlier run measured at the same key, or None (unreadable: None)."""
    path = _baseline_path(workspace, space, key)
    try:
        return SuiteResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep_baseline(workspace: Path, space: str, key: str, baseline: SuiteResult) -> None:
    """Keeps `baseline` for the next run on the same tree (only a suite that collected)."""
    if baseline.collected_ok:
        atomic_write_json(_baseline_path(workspace, space, key), baseline.to_dict())


def remember_change(
    memory: MemoryManager, session: SessionContext, repo: str, target: str, verdict: dict[str, Any]
) -> None:
    """Long-term: where a changed definition lives, and how its change was proven."""
    path, _, qualname = target.partition("::")
    how = "verified by its checks" if verdict.get("verified") else "unverified"
    content = (
        f"In the project {Path(repo).name}, `{qualname}` is defined in `{path}`; run "
        f"{session.run_id} changed it ({how}; {verdict.get('reason', '')})."
    )
    remember_once(memory, session, "project-change", {
        "content": content[:900], "type": "discovery", "confidence": 0.8,
        "source_type": "system", "rationale": "the run's verdict on its commit",
    })  # fmt: skip
