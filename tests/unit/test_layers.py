"""The layer contract (pyproject `[tool.importlinter]`) holds, and fails on an upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_copy(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the project's contract on the copy of atom_agent under `tmp_path`."""
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}  # the copy, not the install
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(tmp_path / "pyproject.toml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "atom_agent",
        tmp_path / "src" / "atom_agent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_package_keeps_its_layers(copied: Path) -> None:
    done = lint_copy(copied)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "atom_agent layers KEPT" in done.stdout


def test_an_upward_import_breaks_the_contract_and_is_named(copied: Path) -> None:
    base = copied / "src" / "atom_agent" / "sandbox" / "base.py"
    base.write_text(base.read_text() + "\n\nimport atom_agent.graph  # a sandbox reaching up\n")

    done = lint_copy(copied)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "atom_agent layers BROKEN" in done.stdout
    assert "atom_agent.sandbox is not allowed to import atom_agent.graph" in done.stdout
    assert "atom_agent.sandbox.base -> atom_agent.graph" in done.stdout


def test_a_module_in_no_layer_breaks_the_contract(copied: Path) -> None:
    (copied / "src" / "atom_agent" / "unplaced.py").write_text('"""In no layer yet."""\n')

    done = lint_copy(copied)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "atom_agent.unplaced" in done.stdout
