"""atom_agent: a LangGraph agent that turns a software task into verified, committed code."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from atom_agent.context import Context

if TYPE_CHECKING:
    from atom_agent.graph import build_graph
    from atom_agent.resources import Resources
    from atom_agent.run import RunOutcome, resume_run, run_task

try:
    __version__ = version("atom-agent")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

# The graph pulls in Chroma, llama.cpp bindings and LangChain agents: import it on first use,
# so `atom-agent --version` and `from atom_agent import Context` stay fast.
_LAZY = {
    "build_graph": "atom_agent.graph",
    "Resources": "atom_agent.resources",
    "run_task": "atom_agent.run",
    "resume_run": "atom_agent.run",
    "RunOutcome": "atom_agent.run",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'atom_agent' has no attribute {name!r}")


__all__ = [
    "Context",
    "RunOutcome",
    "__version__",
    "Resources",
    "build_graph",
    "resume_run",
    "run_task",
]
