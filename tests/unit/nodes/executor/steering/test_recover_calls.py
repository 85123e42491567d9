"""Tool calls a served model writes into its text become calls; anything else stays text."""

from __future__ import annotations

import json

import pytest

from atom_agent.nodes.executor.steering.recover_calls import calls_in_text

TOOLS = ("write_file", "run_tests", "read_file")
WRITE = {"name": "write_file", "arguments": {"path": "impl.py", "content": "x = 1\n"}}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(WRITE),
        f"```json\n{json.dumps(WRITE)}\n```",
        f"<tool_call>\n{json.dumps(WRITE)}\n</tool_call>",
        # The OpenAI wire shape, with arguments as a JSON string.
        json.dumps(
            {
                "type": "function",
                "function": {"name": "write_file", "arguments": json.dumps(WRITE["arguments"])},
            }
        ),
        json.dumps({"name": "write_file", "parameters": WRITE["arguments"]}),
    ],
)
def test_a_call_written_as_text_is_recovered(text: str) -> None:
    calls = calls_in_text(text, TOOLS)
    assert [(c["name"], c["args"]) for c in calls] == [("write_file", WRITE["arguments"])]
    assert calls[0]["id"] and calls[0]["type"] == "tool_call"


def test_several_tagged_calls_are_all_recovered() -> None:
    text = (
        f"<tool_call>{json.dumps(WRITE)}</tool_call>\n"
        f"<tool_call>{json.dumps({'name': 'run_tests', 'arguments': {}})}</tool_call>"
    )
    assert [c["name"] for c in calls_in_text(text, TOOLS)] == ["write_file", "run_tests"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Done: the tests pass.",
        json.dumps({"name": "clamp"}),  # a name alone is data, not a call
        json.dumps({"name": "not a name!", "arguments": {}}),
        json.dumps({"name": "write_file", "arguments": ["impl.py"]}),  # arguments not an object
        json.dumps({"answer": "all good"}),
        '{"name": "write_file", "arguments": {"path": "impl.py"',  # cut off
        f"Here is the call: {json.dumps(WRITE)} and some prose",  # prose around it
        f"<tool_call>{json.dumps(WRITE)}</tool_call><tool_call>not json</tool_call>",
    ],
)
def test_text_that_is_not_only_calls_of_bound_tools_stays_text(text: str) -> None:
    assert calls_in_text(text, TOOLS) == []


def test_no_bound_tools_means_no_calls() -> None:
    assert calls_in_text(json.dumps(WRITE), ()) == []


def test_a_call_of_a_tool_that_does_not_exist_is_recovered_for_the_tool_node_to_refuse() -> None:
    # A small model "calls" the function it was asked to write: the loop answers with the
    # error listing the real tools instead of ending on it.
    text = "```json\n" + json.dumps({"name": "clamp", "arguments": {"x": 5}}) + "\n```"
    (call,) = calls_in_text(text, TOOLS)
    assert (call["name"], call["args"]) == ("clamp", {"x": 5})
