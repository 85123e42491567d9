"""Structured-output calls that also return the model's raw reply (for usage), cheaply.

``with_structured_output(schema, include_raw=True)`` wraps the model in a parallel map, an
assign and a fallback: two thread pools and ≈ 3 ms of LangChain work per call. The raw reply
is only needed for its token usage and to show the model its own invalid answer, and a
callback sees it anyway: :func:`invoke_structured` runs the plain structured runnable and
captures the raw message on the side.
"""

from __future__ import annotations

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
