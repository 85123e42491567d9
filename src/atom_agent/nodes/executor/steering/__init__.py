"""How an executor attempt is steered: one middleware per behaviour, composed in one order.

Models rarely stop by themselves, answer in prose before writing anything, repeat themselves,
or get cut off mid tool call. Code, not the model, decides these things, each in its own
module; :func:`steering` lists the middlewares in the order they wrap each model call (the
first is outermost: its request edits come first, it sees the reply last). The executor runs
its agent with ``invoke`` only, so they wrap sync calls only.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

from .context_window import ContextWindow
from .reask import Reask
from .recover_calls import RecoverCalls
from .require_files import RequireFiles
from .salvage import SalvageNote, SalvageWrite
from .stop import StopAttempt

__all__ = ["steering"]


def steering() -> list[AgentMiddleware[Any, Any, Any]]:
    """The executor agent's steering middlewares, outermost first.

    Request side, in this order: the missing-files note, the salvage note.
    Reply side, innermost first: a call written as text becomes a call; a cut-off write is
    salvaged; a context-window refusal drops earlier turns; a still broken call is asked once
    more.
    """
    return [
        StopAttempt(),
        RequireFiles(),
        SalvageNote(),
        Reask(),
        ContextWindow(),
        SalvageWrite(),
        RecoverCalls(),
    ]
