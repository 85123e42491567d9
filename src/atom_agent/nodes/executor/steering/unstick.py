"""Small models: sample at a higher temperature when greedy decoding is stuck repeating itself."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest
from langchain_core.messages import BaseMessage, ToolMessage

from ..attempt import attempt_of
from ._request import RequestEdit
from .narrow_tools import narrowed

UNSTUCK_TEMPERATURE = 0.7
"""Sampling temperature of a small model once it rewrote a file with identical content."""


class Unstick(RequestEdit):
    """After a write_file that changed nothing, sample instead of decoding greedily.

    Greedy decoding is stuck rewriting the same failing file (or, before the files exist, the
    file it has instead of the missing one). The re-ask of a broken call samples too
    (:mod:`.reask` uses :func:`unstuck`).
    """

    def edit(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Raise the temperature while a tool call is forced and the model repeats itself."""
        if not request.tools or not rewrote_unchanged(request.messages):
            return request
        if not attempt_of(request.runtime).files_written() and not narrowed(request):
            return request
        return unstuck(request)


def unstuck(request: ModelRequest[Any]) -> ModelRequest[Any]:
    """`request` sampled at :data:`UNSTUCK_TEMPERATURE`."""
    settings = {**request.model_settings, "temperature": UNSTUCK_TEMPERATURE}
    return request.override(model_settings=settings)


def rewrote_unchanged(messages: Sequence[BaseMessage]) -> bool:
    """Whether a write_file in this attempt reported an unchanged file (the model repeats)."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == "write_file":
            try:
                if json.loads(str(message.content)).get("unchanged"):
                    return True
            except (ValueError, AttributeError):
                continue
    return False
