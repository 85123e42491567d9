from __future__ import annotations

import pytest
from langchain_google_genai import ChatGoogleGenerativeAI

from atom_agent.errors import MissingCredentialsError, ModelSpecError, ModelUnavailableError
from atom_agent.models import LocalChatModel, load_chat_model, registry, resolve_default_model
from atom_agent.models.registry import parse_spec


@pytest.mark.parametrize("spec", ["gemini", ":x", "google_genai:", "", "   ", "a b:c"])
def test_bad_specs_are_rejected_with_an_example(spec: str) -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_spec(spec)
    assert "provider:model" in str(info.value)


def test_unknown_provider_lists_known_ones() -> None:
    with pytest.raises(ModelSpecError) as info:
        parse_spec("acme:gpt-9")
    text = str(info.value)
    assert "unknown model provider 'acme'" in text
    assert "google_genai" in text and "local" in text


def test_parse_spec_accepts_provider_model_and_local() -> None:
    spec = parse_spec("google_genai:gemini-2.5-pro")
    assert (spec.provider, spec.model) == ("google_genai", "gemini-2.5-pro")
    assert parse_spec("ollama:qwen2.5-coder:1.5b").model == "qwen2.5-coder:1.5b"
    assert parse_spec("local").provider == "local"
    assert str(parse_spec("local")) == "local"


def test_missing_key_names_the_variables() -> None:
    with pytest.raises(MissingCredentialsError) as info:
        load_chat_model("google_genai:gemini-2.5-pro", env={})
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in str(info.value)
    assert info.value.variables == ("GOOGLE_API_KEY", "GEMINI_API_KEY")


def test_uninstalled_provider_says_what_to_install() -> None:
    with pytest.raises(ModelUnavailableError, match="pip install langchain-anthropic"):
        load_chat_model("anthropic:claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": "k"})


def test_gemini_is_built_with_the_key_and_bounded_retries() -> None:
    # Construction only: no request is sent (the suite is offline).
    model = load_chat_model(
        "google_genai:gemini-2.5-flash", env={"GEMINI_API_KEY": "test-key"}, max_retries=2
    )
    assert isinstance(model, ChatGoogleGenerativeAI)
    assert model.max_retries == 2
    assert model.google_api_key is not None
    assert model.google_api_key.get_secret_value() == "test-key"


def test_local_spec_builds_the_local_model_without_loading_it() -> None:
    model = load_chat_model("local", temperature=0.3)
    assert isinstance(model, LocalChatModel)
    assert model.temperature == 0.3


def test_resolution_order(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"ATOM_MODEL": "openai:gpt-4.1", "GOOGLE_API_KEY": "k"}
    assert resolve_default_model("anthropic:claude-x", env=env).spec == "anthropic:claude-x"
    assert resolve_default_model(None, env=env).spec == "openai:gpt-4.1"
    gemini = resolve_default_model(None, env={"GEMINI_API_KEY": "k"})
    assert gemini.spec == "google_genai:gemini-2.5-pro"
    assert "GEMINI_API_KEY is set" in gemini.reason
    monkeypatch.setattr(registry, "local_installed", lambda: True)
    local = resolve_default_model(None, env={})
    assert local.spec == "local"
    assert "no GOOGLE_API_KEY" in local.reason


def test_resolution_error_explains_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "local_installed", lambda: False)
    with pytest.raises(ModelUnavailableError) as info:
        resolve_default_model(None, env={})
    text = str(info.value)
    assert "GOOGLE_API_KEY" in text and "atom-agent[local]" in text


def test_resolution_rejects_a_bad_atom_model() -> None:
    with pytest.raises(ModelSpecError):
        resolve_default_model(None, env={"ATOM_MODEL": "gemini"})
