"""atom_agent: a LangGraph agent that turns a software task into verified, committed code."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from atom_agent.context import Context

try:
    __version__ = version("atom-agent")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = ["Context", "__version__"]
