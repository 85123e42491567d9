"""How an executor attempt is steered: one middleware per behaviour, composed from the profile.

Small models rarely stop by themselves, answer in prose before writing anything, wander, repeat
themselves, or get cut off mid tool call. Code, not the model, decides these things, each in
its own module; :func:`steering` lists the middlewares a model profile gets, in the order they
wrap each model call (the first is outermost: its request edits come first, it sees the reply
last).
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

from atom_agent.models.profiles import ModelProfile

from .context_window import ContextWindow
from .examples_note import ExamplesNote
from .narrow_tools import NarrowTools
from .reask import Reask
from .recover_calls import RecoverCalls
from .require_files import RequireFiles
from .salvage import SALVAGED, SalvageNote, SalvageWrite
from .stop import StopAttempt
from .unstick import UNSTUCK_TEMPERATURE, Unstick

__all__ = ["SALVAGED", "UNSTUCK_TEMPERATURE", "steering"]


def steering(profile: ModelProfile) -> list[AgentMiddleware[Any, Any, Any]]:
    """The executor agent's steering middlewares for a model of `profile`, outermost first.

    Request side, in this order: force a tool call until the files exist (the missing-files
    note), narrow the choice and sample when stuck (``steer_tools``), the salvage note, the
    examples note. Reply side, innermost first: a call written as text becomes a call; a
    cut-off write is salvaged; a context-window refusal drops earlier turns; a still broken
    call is asked once more.
    """
    small = profile.steer_tools
    return [
        StopAttempt(),
        RequireFiles(keep_working=small, force=small),
        *((NarrowTools(), Unstick()) if small else ()),
        SalvageNote(),
        ExamplesNote(),
        Reask(resample=small),
        ContextWindow(),
        SalvageWrite(),
        RecoverCalls(),
    ]
