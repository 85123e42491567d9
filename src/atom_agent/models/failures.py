"""A model server that is down, or answers what no client can read, said in one line."""

from __future__ import annotations

from atom_agent.environment import causes


def model_failure(exc: BaseException) -> str | None:
    """One line for a model call that failed because of its server, or None.

    Recognises the OpenAI client's connection, timeout, status and response errors (what
    every OpenAI-compatible server raises through ``langchain-openai``) and httpx's
    transport errors, also when wrapped in another exception.
    """
    return next((line for e in causes(exc) if (line := _line(e)) is not None), None)


def _line(exc: BaseException) -> str | None:
    # openai and httpx come with langchain-openai, a dependency.
    import httpx
    import openai

    from atom_agent.models.served import ServerReplyError

    if isinstance(exc, ServerReplyError):
        return str(exc)
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
    if isinstance(exc, httpx.TransportError):
        return f"the model server{_where(getattr(exc, '_request', None))} cannot be reached: {exc}"
    return None


def _where(request: object) -> str:
    url = getattr(request, "url", None)
    return f" at {url}" if url is not None else ""
