"""Every file README.md and docs/*.md name exists: a doc never points at deleted code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *(p for p in sorted((REPO / "docs").glob("*.md")) if p.name != "measurements.md"),
]
"""The docs that describe the code as it is. docs/measurements.md is the log of what was
measured when, and names modules deleted since (saying so) as the history it records."""
ROOTS = (REPO, REPO / "src", REPO / "src" / "atom_agent", REPO / "tests")
"""Where a named path may live: the repository, src/, the package (module paths), tests/."""

_NAMED = re.compile(
    r"`([A-Za-z0-9_][A-Za-z0-9_./-]*/[A-Za-z0-9_./-]*\.(?:py|md|sh|toml|json|jsonl|cfg|ini|txt))`"
)
"""A path in backticks, with a folder and a file extension (runtime paths such as
``runs/<id>/…`` have placeholders, ``.venv/…`` and ``~/.cache/…`` start otherwise)."""

RUNTIME = ("runs/", "result/", "steps/", "messages/", "memory/", "projects/", "demo_workspace/")
"""Folders a run or a workspace creates: named in the docs, never in the repository."""


def named_paths() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for path in dict.fromkeys(_NAMED.findall(doc.read_text(encoding="utf-8"))):
            if not path.startswith(RUNTIME):
                found.append((doc.relative_to(REPO).as_posix(), path))
    return found


def test_the_docs_name_paths() -> None:
    assert len(named_paths()) > 30  # the pattern still finds what the docs name


@pytest.mark.parametrize(("doc", "path"), named_paths(), ids=lambda v: v)
def test_a_named_path_exists(doc: str, path: str) -> None:
    assert any((root / path).exists() for root in ROOTS), f"{doc} names {path}, which is gone"
