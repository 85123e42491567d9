"""Chat models: ``provider:model`` specs through LangChain, the embedded local model, defaults."""

from atom_agent.models.local import LocalChatModel
from atom_agent.models.registry import (
    DEFAULT_GEMINI,
    LOCAL,
    load_chat_model,
    local_installed,
    parse_spec,
    resolve_default_model,
)

__all__ = [
    "DEFAULT_GEMINI",
    "LOCAL",
    "LocalChatModel",
    "load_chat_model",
    "local_installed",
    "parse_spec",
    "resolve_default_model",
]
