"""LangChain's standard integration tests (``langchain-tests``) on the embedded local model.

One model object, with its weights loaded once, serves the whole module. Tests a 1.5B model
cannot pass are marked xfail with what it answered when measured; a failure of our wrapper
is fixed in :mod:`atom_agent.models.local` instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_tests.integration_tests import ChatModelIntegrationTests

from atom_agent.models import local
from atom_agent.models.local import LocalChatModel
from atom_agent.models.registry import local_installed

pytestmark = [pytest.mark.local_model, pytest.mark.integration]

PARAMS: dict[str, Any] = {"max_tokens": 256}
"""Replies of the suite's prompts ("Hello", "Tell me a joke") need no more."""


@pytest.fixture(scope="module")
def shared_model() -> Iterator[LocalChatModel]:
    if not local_installed():
        pytest.skip("the local model is not installed (llama-cpp-python and its weights)")
    chat = LocalChatModel(**PARAMS)
    llama, _ = chat._engine()
    with pytest.MonkeyPatch.context() as patch:
        # A model the suite builds itself (test_stop_sequence) gets these weights too.
        patch.setattr(local, "_load", lambda *_args, **_kwargs: llama)
        yield chat


class TestLocalChatModelIntegration(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return dict(PARAMS)

    @pytest.fixture
    def model(self, request: pytest.FixtureRequest, shared_model: LocalChatModel) -> LocalChatModel:
        extra = getattr(request, "param", None) or {}
        # A copy shares the loaded weights and their lock (pydantic copies private attributes).
        return shared_model.model_copy(update=extra) if extra else shared_model

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False

    @property
    def supports_image_inputs(self) -> bool:
        return False

    @property
    def supports_image_urls(self) -> bool:
        return False

    @property
    def supports_pdf_inputs(self) -> bool:
        return False

    @property
    def supports_audio_inputs(self) -> bool:
        return False

    @property
    def supports_video_inputs(self) -> bool:
        return False

    @property
    def supports_image_tool_message(self) -> bool:
        return False

    @property
    def supports_pdf_tool_message(self) -> bool:
        return False

    @property
    def supports_anthropic_inputs(self) -> bool:
        return False

    # Capability limits of a 1.5B model, measured (greedy decoding, the replies quoted).

    @pytest.mark.xfail(
        reason="with tool_choice auto, Qwen2.5-Coder-1.5B answers instead of calling "
        "get_weather: 'The weather in San Francisco, CA is currently sunny with a high of "
        "72 degrees Fahrenheit.'"
    )
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_agent_loop(self, model: BaseChatModel) -> None:
        super().test_agent_loop(model)
