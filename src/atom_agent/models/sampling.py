"""One reply of a chat model at a temperature, ended where the code the prompt asks for ends."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.models.purpose import Purpose, calling
from atom_agent.models.stopping import Expecting, code_replies


def sample(
    model: BaseChatModel,
    messages: list[BaseMessage],
    temperature: float,
    *,
    purpose: Purpose,
    source: str = "",
    code_only: Expecting = "",
    names: Sequence[str] = (),
) -> AIMessage:
    """One reply of `model` at `temperature` (models that take no temperature get none).

    `purpose`: what the call is for, and `source`: the named prompt `messages` are built from
    (default: the purpose's own), in its metadata (:mod:`atom_agent.models.purpose`).

    `code_only` (``"code"`` or ``"tests"``): the prompt asks for one block of that and
    nothing else, so a model that can may end the reply when the block is complete
    (:func:`~atom_agent.models.stopping.code_replies`); ``"module"``: a whole module whose
    tests are left out. `names`: what the code must define; the reply may end where tests
    begin after code that defines them all.
    """
    with calling(purpose, source), code_replies(code_only, names) if code_only else nullcontext():
        try:
            reply = model.invoke(messages, temperature=temperature)
        except TypeError:  # a chat model without a per-call temperature
            reply = model.invoke(messages)
    return reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply.content))
