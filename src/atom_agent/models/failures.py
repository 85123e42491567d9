"""A model server that is down, or answers what no client can read, said in one line."""

from __future__ import annotations


def model_failure(exc: BaseException) -> str | None:
    """One line for a model call that failed because of its server, or None.

    Recognises the OpenAI client's connection, timeout, status and response errors (what
    every OpenAI-compatible server raises through ``langchain-openai``) and httpx's
    transport errors, also when wrapped in another exception.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        line = _line(current)
        if line is not None:
            return line
        current = current.__cause__ or current.__context__
    return None


def _line(exc: BaseException) -> str | None:
    from atom_agent.models.served import ServerReplyError

    if isinstance(exc, ServerReplyError):
        return str(exc)
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        openai = None  # type: ignore[assignment]
    if openai is not None:
        where = _where(getattr(exc, "request", None))
        if isinstance(exc, openai.APITimeoutError):
            return f"the model server{where} did not answer in time"
        if isinstance(exc, openai.APIConnectionError):
            return f"the model server{where} cannot be reached (is it running? check --base-url)"
        if isinstance(exc, openai.APIStatusError):
            detail = str(getattr(exc, "message", "") or exc)[:200]
            return f"the model server{where} answered HTTP {exc.status_code}: {detail}"
        if isinstance(exc, openai.APIResponseValidationError):
            return f"the model server{where} answered something that is not an OpenAI reply"
    try:
        import httpx
    except ImportError:  # pragma: no cover - a dependency of langgraph's SDK
        return None
    if isinstance(exc, httpx.TransportError):
        return f"the model server{_where(getattr(exc, '_request', None))} cannot be reached: {exc}"
    return None


def _where(request: object) -> str:
    url = getattr(request, "url", None)
    return f" at {url}" if url is not None else ""
