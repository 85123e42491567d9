"""Structured-output calls that also return the model's raw reply (for usage), cheaply.

``with_structured_output(schema, include_raw=True)`` wraps the model in a parallel map, an
assign and a fallback: two thread pools and ≈ 3 ms of LangChain work per call. The raw reply
is only needed for its token usage and to show the model its own invalid answer, and a
callback sees it anyway: :func:`invoke_structured` runs the plain structured runnable and
captures the raw message on the side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableSequence
from langchain_core.utils.function_calling import convert_to_json_schema
from pydantic import BaseModel, ValidationError

from atom_agent.errors import ModelError


@dataclass(frozen=True)
class StructuredReply:
    """What one structured-output call produced.

    Attributes:
        parsed: the parsed answer, or None when the reply did not match the schema.
        raw: the model's reply message (None if the model produced none).
        error: why parsing failed ('' when it did not).
    """

    parsed: Any
    raw: AIMessage | None
    error: str = ""


class _RawReply(BaseCallbackHandler):
    """Keeps the last chat message a model call produced."""

    def __init__(self) -> None:
        self.message: AIMessage | None = None

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                if isinstance(generation, ChatGeneration) and isinstance(
                    generation.message, AIMessage
                ):
                    self.message = generation.message


def invoke_structured(
    runnable: Runnable[LanguageModelInput, Any], messages: LanguageModelInput
) -> StructuredReply:
    """Call ``model.with_structured_output(schema)`` (built without include_raw) on `messages`.

    A reply that does not parse is a :class:`StructuredReply` with ``parsed=None`` and the
    reason; a failed model call (no reply at all) raises as the model raised.
    """
    capture = _RawReply()
    try:
        parsed = runnable.invoke(messages, config={"callbacks": [capture]})
    except (OutputParserException, ValidationError, ModelError, ValueError) as exc:
        if capture.message is None:
            raise  # the model call itself failed: not a parsing problem
        return StructuredReply(None, capture.message, f"{type(exc).__name__}: {exc}")
    if parsed is None:
        return StructuredReply(None, capture.message, "the reply held no structured answer")
    return StructuredReply(parsed, capture.message)


def with_schema_computed_once(runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """`runnable` (``with_structured_output(SomeModel)``) with its tracing schema computed once.

    LangChain's chat models turn the schema they were bound with into a JSON schema on every
    call, for tracing metadata only (``ls_structured_output_format``): for a pydantic class that
    is pydantic's schema generation, milliseconds per call. Given the JSON schema instead, the
    same conversion is a dict copy and the metadata is the same. Runnables of another shape are
    returned as they are.
    """
    if not isinstance(runnable, RunnableSequence) or not isinstance(
        runnable.first, RunnableBinding
    ):
        return runnable
    first = runnable.first
    traced = first.kwargs.get("ls_structured_output_format")
    if not isinstance(traced, dict):
        return runnable
    schema = traced.get("schema")
    if not isinstance(schema, type) or not issubclass(schema, BaseModel):
        return runnable
    bound = first.bind(
        ls_structured_output_format={**traced, "schema": convert_to_json_schema(schema)}
    )
    return RunnableSequence(bound, *runnable.middle, runnable.last)


@dataclass(frozen=True)
class SizedReply:
    """What one schema-bounded call (:func:`invoke_sized`) produced.

    Attributes:
        data: the reply's JSON object, or None when it held none.
        raw: the model's reply message (None if the model produced none).
        text: the reply's JSON as written (possibly cut off): what :func:`complete_items`
            reads the whole items of when the reply did not parse.
    """

    data: dict[str, Any] | None
    raw: AIMessage | None
    text: str = ""


def speaks_response_format(model: Any) -> bool:
    """Whether `model` is an OpenAI-compatible chat model (it takes ``response_format``).

    A model may also say so itself (``response_format = True``: a replay of a served run).
    """
    if getattr(model, "response_format", False) is True:
        return True
    return any(cls.__module__.startswith("langchain_openai") for cls in type(model).__mro__)


def invoke_sized(
    model: Any,
    name: str,
    schema: dict[str, Any],
    messages: LanguageModelInput,
    *,
    max_tokens: int,
    description: str = "",
) -> SizedReply:
    """One call whose reply is JSON of `schema` (named `name`), at most `max_tokens` long.

    The schema's bounds (``maxItems``, ``maxLength``) make a reply end where its structure
    does: the embedded model decodes under a grammar compiled from it (a forced tool call,
    :class:`~atom_agent.models.local.LocalChatModel`), an OpenAI-compatible server is given it
    as ``response_format`` (llama-server and vLLM constrain decoding by it), any other model
    gets it as a forced tool call (its own structured output). `max_tokens` is sized by the
    caller to what the schema admits, so the structure ends before the cap; when the cap
    cuts a reply anyway, its text is kept (:func:`complete_items` reads its whole items).
    """
    if speaks_response_format(model):
        fmt = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        reply = model.bind(response_format=fmt, max_tokens=max_tokens).invoke(messages)
        return _sized(reply)
    tool = {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }
    try:
        bound = model.bind_tools([tool], tool_choice=name, max_tokens=max_tokens)
    except NotImplementedError:  # a chat model without tools: its text, read as JSON
        bound = model.bind(max_tokens=max_tokens)
    return _sized(bound.invoke(messages))


def _sized(reply: Any) -> SizedReply:
    """The JSON object of a reply: its tool call's arguments, else its text parsed."""
    if not isinstance(reply, AIMessage):
        return SizedReply(None, None, str(getattr(reply, "content", reply)))
    if reply.tool_calls:
        args = reply.tool_calls[0]["args"]
        return SizedReply(dict(args), reply, json.dumps(args))
    if reply.invalid_tool_calls:  # cut off before its JSON closed: the partial arguments
        partial = reply.invalid_tool_calls[0].get("args") or ""
        return SizedReply(None, reply, str(partial))
    text = reply.text.strip()
    parsed = reply.additional_kwargs.get("parsed")
    if not isinstance(parsed, dict):
        try:
            parsed = json.loads(_unfenced(text))
        except ValueError:
            parsed = None
    return SizedReply(parsed if isinstance(parsed, dict) else None, reply, text)


def _unfenced(text: str) -> str:
    """`text` without a Markdown fence around it (```json ... ```)."""
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text


def complete_items(text: str, key: str) -> list[Any]:
    """The whole items of the array under `key` in `text`, JSON that may be cut off.

    A reply cut at its token cap mid-item keeps every item written before the cut: ``{"checks":
    [{"call": "f(1)", "expect": "2"}, {"call": "f(`` gives the first check.
    """
    at = text.find(f'"{key}"')
    if at < 0:
        return []
    start = text.find("[", at)
    if start < 0:
        return []
    decoder = json.JSONDecoder()
    items: list[Any] = []
    i = start + 1
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return items
        try:
            item, i = decoder.raw_decode(text, i)
        except ValueError:
            return items
        items.append(item)
