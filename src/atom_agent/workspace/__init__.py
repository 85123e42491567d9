"""The workspace tree (docs/workspace-and-sandbox.md): runs, steps, attempts, staging → commit."""

from __future__ import annotations

from atom_agent.workspace.atomic import atomic_write_json, atomic_write_text
from atom_agent.workspace.history import clean_message, clean_messages
from atom_agent.workspace.tree import (
    SCHEMA_VERSION,
    AttemptRef,
    RunRef,
    StepRef,
    Workspace,
    read_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "AttemptRef",
    "RunRef",
    "StepRef",
    "Workspace",
    "atomic_write_json",
    "atomic_write_text",
    "clean_message",
    "clean_messages",
    "read_json",
]
