"""Chat models: ``provider:model`` specs through LangChain, the embedded local model, defaults."""

from atom_agent.models.local import LocalChatModel
from atom_agent.models.registry import LOCAL, load_chat_model, resolve_default_model

__all__ = [
    "LOCAL",
    "LocalChatModel",
    "load_chat_model",
    "resolve_default_model",
]
