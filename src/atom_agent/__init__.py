"""atom_agent: a LangGraph agent that turns a software task into verified, committed code."""

from __future__ import annotations

import sys
import types
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from atom_agent.context import Context

if TYPE_CHECKING:
    from atom_agent.graph import build_graph, graph
    from atom_agent.run import RunOutcome, resume_run, run_task

try:
    __version__ = version("atom-agent")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

# The graph pulls in Chroma, llama.cpp bindings and LangChain agents: import it on first use,
# so `atom-agent --version` and `from atom_agent import Context` stay fast.
_LAZY = {
    "build_graph": "atom_agent.graph",
    "graph": "atom_agent.graph",
    "run_task": "atom_agent.run",
    "resume_run": "atom_agent.run",
    "RunOutcome": "atom_agent.run",
}


class _Package(types.ModuleType):
    """The package module, with one rule: the name ``graph`` stays the compiled graph.

    Importing a submodule binds it as an attribute of its package, so once anything ran
    ``import atom_agent.graph`` (``run.py`` does, ``langgraph.json`` names the file),
    ``atom_agent.graph`` would be the module and ``from atom_agent import graph`` would
    hand out the module instead of the graph. The submodule stays importable by its full
    name (``from atom_agent.graph import build_graph``); only the binding is skipped.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "graph" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'atom_agent' has no attribute {name!r}")


__all__ = [
    "Context",
    "RunOutcome",
    "__version__",
    "build_graph",
    "graph",
    "resume_run",
    "run_task",
]
