"""Tool → OpenAI-format schema conversion, cached per tool object.

`create_agent` binds the tools before every model call, and LangChain rebuilds each tool's
JSON schema from pydantic every time (≈1.5 ms per tool). Executors build fresh tool objects
per attempt, but a tool's schema only depends on its name, description and argument model:
tools whose argument model is a class defined once share one conversion; others are cached
per object.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

_MAX = 512
_CACHE: OrderedDict[tuple[Any, ...], tuple[object, dict[str, Any]]] = OrderedDict()
_LOCK = threading.Lock()


def _key(tool: Any) -> tuple[Any, ...]:
    if isinstance(tool, BaseTool) and isinstance(tool.args_schema, type):
        # The class object is part of the key (and kept alive by the entry), so a schema
        # class created per factory call never matches another one.
        return (type(tool), tool.name, tool.description, tool.args_schema)
    return ("id", id(tool))


def openai_tool(tool: Any) -> dict[str, Any]:
    """``convert_to_openai_tool(tool)``, memoised; do not mutate the result."""
    if isinstance(tool, dict):
        return convert_to_openai_tool(tool)
    key = _key(tool)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and (key[0] != "id" or hit[0] is tool):
            _CACHE.move_to_end(key)
            return hit[1]
    converted = convert_to_openai_tool(tool)
    with _LOCK:
        # Holding the tool keeps its id from being reused while the entry lives.
        _CACHE[key] = (tool, converted)
        while len(_CACHE) > _MAX:
            _CACHE.popitem(last=False)
    return converted
