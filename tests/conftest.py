"""Suite-wide settings: the suite is offline and never reads the developer's configuration."""

from __future__ import annotations

import os

# Set before anything imports chromadb / langgraph / langsmith: tests never touch the network.
OFFLINE_ENV = {
    "ANONYMIZED_TELEMETRY": "False",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "OMP_WAIT_POLICY": "PASSIVE",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
os.environ.update(OFFLINE_ENV)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and ATOM_* settings of the developer's shell must not change test outcomes."""
    for name in list(os.environ):
        if (
            name.startswith("ATOM_")
            and name != "ATOM_LOCAL_MODEL_PATH"
            and name != "ATOM_WHEEL_CACHE"
        ):
            monkeypatch.delenv(name, raising=False)
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
