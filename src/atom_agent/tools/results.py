"""What a tool call gives the model: JSON text, refusals as ``{"error": ...}``, one error shape."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ValidationError

from atom_agent.prompts import prompt_text, register

INVALID_ARGUMENTS = register(
    "INVALID_ARGUMENTS",
    "invalid arguments for {tool}: {problems}. Nothing was changed; fix the arguments and "
    "call it again.",
)
"""A tool call whose arguments do not fit the tool's schema (one shape for every tool)."""


def structured_tool(func: Callable[..., str], schema: type[BaseModel] | None = None) -> BaseTool:
    """A StructuredTool from `func` whose refusals and bad arguments become JSON error results.

    The schema comes from `func` itself: each argument's type and default from its signature
    (constraints as ``Annotated[int, Field(ge=1)]``), its description from the docstring's
    Google-style ``Args:`` section; the docstring above that section is the model's manual
    (the tool's description). Its ``runtime: ToolRuntime`` parameter (if any) is injected by
    the agent and is not part of the schema the model sees. `schema` replaces the derived
    one only where a signature cannot say what the model sees (see run_python).
    """
    return StructuredTool.from_function(
        func=func,
        name=func.__name__,
        description=manual(func),
        args_schema=schema,
        parse_docstring=schema is None,
        error_on_invalid_docstring=schema is None,
        handle_tool_error=tool_error_json,
        handle_validation_error=invalid_arguments(func.__name__),
    )


def manual(func: Callable[..., Any]) -> str:
    """`func`'s docstring up to its ``Args:`` section: the tool description the model reads.

    Sent with every call that offers the tool, so it is sent compact: the source's
    indentation and line wrapping dropped, a paragraph a line.
    """
    text = _ARGS_SECTION.split(inspect.cleandoc(func.__doc__ or ""), maxsplit=1)[0]
    return "\n".join(" ".join(p.split()) for p in _PARAGRAPHS.split(text.strip()) if p.strip())


_ARGS_SECTION = re.compile(r"\n[ \t]*Args:[ \t]*\n")
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")


def tool_error_json(error: ToolException) -> str:
    """The model-facing content of a refused tool call: ``{"error": "..."}``."""
    return to_json({"error": str(error)})


def invalid_arguments(tool: str) -> Callable[[ValidationError], str]:
    """The one formatter of arguments that do not fit `tool`'s schema (field, what is wrong)."""

    def handle(error: ValidationError) -> str:
        return to_json({"error": invalid_arguments_text(tool, error)})

    return handle


def invalid_arguments_text(tool: str, error: Any) -> str:
    """The message of :func:`invalid_arguments` (for a ValidationError or anything else)."""
    if isinstance(error, ValidationError):
        problems = _problems(error.errors())
    else:
        problems = str(error)
    return prompt_text("INVALID_ARGUMENTS").format(tool=tool, problems=problems)


def _problems(errors: Sequence[Any]) -> str:
    """Pydantic's errors as the model can act on them: missing fields by name, then the rest.

    A missing field's error carries the whole argument dict as its input, and that dict holds
    the injected ``runtime`` (the run's context, which the model never sent and cannot fix):
    only the field's name is shown.
    """
    missing = [_where(e) for e in errors if e["type"] == "missing" and e["loc"]]
    parts = []
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        parts.append(f"missing required argument{'s' if len(missing) > 1 else ''} {names}")
    parts.extend(
        f"{_where(e) or 'arguments'}: {e['msg']}"
        + (f" (got {_shown_input(e['input'])})" if "input" in e and e["loc"] else "")
        for e in errors
        if not (e["type"] == "missing" and e["loc"])
    )
    return "; ".join(parts)


def _where(error: Any) -> str:
    return ".".join(str(p) for p in error["loc"])


def _shown_input(value: Any) -> str:
    if isinstance(value, dict | list | tuple) and len(value) > 20:
        return f"<{type(value).__name__} of {len(value)}>"
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # a model's 10,000-deep list
        return f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def to_json(data: Mapping[str, Any]) -> str:
    """Compact JSON for the model (UTF-8 kept readable; lone surrogates escaped, never sent raw)."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, ensure_ascii=True)
    return text
