"""The local model's tool protocol, without loading weights: schema, rendering, parsing."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from atom_agent.errors import ModelError
from atom_agent.models.local import _allowed_tools, _parse_reply, _render, _reply_schema


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return "ok"


@tool
def tag(names: list[str]) -> str:
    """Tag things."""
    return "ok"


TOOLS = [convert_to_openai_tool(write_file), convert_to_openai_tool(tag)]


def test_auto_choice_allows_tools_and_an_answer() -> None:
    allowed = _allowed_tools(TOOLS, None)
    assert allowed is not None
    schema = _reply_schema(allowed)
    options = schema["anyOf"]
    assert [o["properties"].get("name", {}).get("const") for o in options] == [
        "write_file",
        "tag",
        None,
    ]
    assert options[2]["required"] == ["answer"]


def test_forced_choices() -> None:
    assert _allowed_tools(TOOLS, "any") == TOOLS
    assert _allowed_tools(TOOLS, "tag") == [TOOLS[1]]
    assert _allowed_tools(TOOLS, {"type": "function", "function": {"name": "write_file"}}) == [
        TOOLS[0]
    ]
    assert _allowed_tools(TOOLS, "none") is None
    assert _allowed_tools([], None) is None
    with pytest.raises(ModelError, match="names no bound tool"):
        _allowed_tools(TOOLS, "delete_everything")


def test_arrays_are_capped_in_the_grammar_schema() -> None:
    schema = _reply_schema([TOOLS[1]], max_items=5)
    names = schema["properties"]["arguments"]["properties"]["names"]
    assert names["type"] == "array" and names["maxItems"] == 5
    assert "maxItems" not in TOOLS[1]["function"]["parameters"]["properties"]["names"]


def test_render_spells_out_calls_and_results() -> None:
    messages = [
        SystemMessage("Be brief."),
        HumanMessage("write it"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "write_file", "args": {"path": "a.py", "content": "x"}, "id": "c1"}
            ],
        ),
        ToolMessage(content='{"status": "ok"}', tool_call_id="c1", name="write_file"),
    ]
    chat = _render(messages, TOOLS, _allowed_tools(TOOLS, None))
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[0]["content"].startswith("Be brief.")
    assert "- write_file: Write a file." in chat[0]["content"]
    assert json.loads(chat[2]["content"]) == {
        "name": "write_file",
        "arguments": {"path": "a.py", "content": "x"},
    }
    assert chat[3]["content"].startswith("Result of tool `write_file` (call c1):")


def test_parse_reply() -> None:
    allowed = _allowed_tools(TOOLS, None)
    call = _parse_reply('{"name": "tag", "arguments": {"names": ["a"]}}', allowed, "stop")
    assert call.tool_calls[0]["name"] == "tag"
    assert call.tool_calls[0]["args"] == {"names": ["a"]}
    answer = _parse_reply('{"answer": "done"}', allowed, "stop")
    assert answer.content == "done" and not answer.tool_calls
    cut = _parse_reply('{"name": "tag", "argu', allowed, "length")
    assert not cut.tool_calls
    assert "finish_reason=length" in cut.invalid_tool_calls[0]["error"]
    assert _parse_reply("plain text", None, "stop").content == "plain text"


def test_a_forced_tool_narrows_the_reply_but_not_the_prompt() -> None:
    messages = [SystemMessage("Be brief."), HumanMessage("write it")]
    forced = _allowed_tools(TOOLS, "tag")
    assert forced == [TOOLS[1]]
    # Every bound tool stays listed: the prompt (and llama.cpp's cached prefix) is unchanged.
    everything = _allowed_tools(TOOLS, None)
    assert _render(messages, TOOLS, forced) == _render(messages, TOOLS, everything)
    with pytest.raises(ModelError, match="names no bound tool"):
        _allowed_tools(TOOLS, "rm_rf")
