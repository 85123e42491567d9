"""Chat models: ``provider:model`` specs through LangChain, the embedded local model, defaults.

The names below are loaded on first use (PEP 562): a light submodule (``.weights``,
``.profiles``) is imported without LangChain's chat models, which take over a second to load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atom_agent.lazy import lazy_names

if TYPE_CHECKING:
    from atom_agent.models.local import LocalChatModel
    from atom_agent.models.registry import LOCAL, load_chat_model, resolve_default_model

_WHERE = {
    "LocalChatModel": "atom_agent.models.local",
    "LOCAL": "atom_agent.models.registry",
    "load_chat_model": "atom_agent.models.registry",
    "resolve_default_model": "atom_agent.models.registry",
}

__all__ = [
    "LOCAL",
    "LocalChatModel",
    "load_chat_model",
    "resolve_default_model",
]


__getattr__ = lazy_names(__name__, _WHERE)
