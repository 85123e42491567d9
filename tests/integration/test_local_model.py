"""The embedded llama.cpp model, for real: load, generate, tool calls, structured output."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from atom_agent.errors import ContextWindowError
from atom_agent.models import LocalChatModel, load_chat_model
from atom_agent.models.weights import QWEN_CODER_1_5B, ensure_weights

pytestmark = [pytest.mark.local_model, pytest.mark.integration]


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"sunny in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers and return the sum."""
    return a + b


class Task(BaseModel):
    """A unit of work."""

    title: str = Field(description="a short title")
    steps: list[str] = Field(description="the steps, in order")
    estimate_hours: int = Field(description="hours of work, a whole number")


@pytest.fixture(scope="module")
def model() -> LocalChatModel:
    chat = load_chat_model("local", max_tokens=512)
    assert isinstance(chat, LocalChatModel)
    return chat


def test_weights_are_assembled_and_verified() -> None:
    path = ensure_weights()
    assert path.stat().st_size == QWEN_CODER_1_5B.size
    assert path.with_name(path.name + ".verified.json").exists()


def test_generates_text_and_reports_usage(model: LocalChatModel) -> None:
    reply = model.invoke([HumanMessage("Write a Python function that returns the square of x.")])
    assert isinstance(reply, AIMessage)
    assert "def " in reply.text
    usage = reply.usage_metadata
    assert usage is not None and usage["input_tokens"] > 5 and usage["output_tokens"] > 5
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_a_reply_streams_token_by_token_the_first_piece_well_before_the_last() -> None:
    # A reply nothing may cut later streams its text as decoded; one the early stop watches
    # (the agent's default) a few lines behind (see _stream and the module-reply test below).
    model = LocalChatModel(max_tokens=64)
    assert not model.stop_early
    model.invoke([HumanMessage("Say hi.")], max_tokens=2)  # loaded: its load is not timed below
    prompt = [HumanMessage("Write a Python function that returns the square of x, with a "
                           "docstring and three pytest tests.")]  # fmt: skip
    arrivals: list[tuple[float, AIMessageChunk]] = []
    started = time.perf_counter()
    for chunk in model.stream(prompt, max_tokens=64):
        assert isinstance(chunk, AIMessageChunk)
        arrivals.append((time.perf_counter() - started, chunk))
    text = "".join(c.text for _, c in arrivals)
    assert len(arrivals) > 10 and "def " in text
    first, last = arrivals[0][0], arrivals[-1][0]
    # Decoding 64 tokens takes seconds on 2 cores; the first piece comes after the prefill.
    assert first < last / 2, (first, last)
    final = arrivals[-1][1]
    assert final.chunk_position == "last" and final.usage_metadata is not None
    assert final.usage_metadata["output_tokens"] == len([c for _, c in arrivals if c.text])
    # The same request invoked gives the same reply (greedy): streaming changes nothing.
    assert model.invoke(prompt, max_tokens=64).text == text


def test_bind_tools_yields_a_valid_call_of_a_bound_tool(model: LocalChatModel) -> None:
    bound = model.bind_tools([get_weather, add], tool_choice="any")
    reply = bound.invoke([HumanMessage("What is the weather like in Lisbon today?")])
    assert isinstance(reply, AIMessage)
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert call["name"] in {"get_weather", "add"}
    chosen = {"get_weather": get_weather, "add": add}[call["name"]]
    chosen.invoke(call["args"])  # raises if the arguments do not fit the tool's schema


def test_auto_tool_choice_parses_after_a_tool_result(model: LocalChatModel) -> None:
    bound = model.bind_tools([get_weather, add])
    history = [
        SystemMessage("You are a helpful assistant."),
        HumanMessage("What is 17 plus 25?"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "add", "args": {"a": 17, "b": 25}, "id": "c1", "type": "tool_call"}
            ],
        ),
        ToolMessage(content="42", tool_call_id="c1", name="add"),
    ]
    reply = bound.invoke(history)
    assert isinstance(reply, AIMessage)
    assert not reply.invalid_tool_calls
    assert reply.tool_calls or reply.text.strip()  # a call or a final answer, never junk
    for call in reply.tool_calls:
        assert call["name"] in {"get_weather", "add"}


def test_structured_output_is_a_valid_instance(model: LocalChatModel) -> None:
    result = model.with_structured_output(Task).invoke(
        "Plan the task: add an LRU cache module with tests."
    )
    assert isinstance(result, Task)
    assert result.title.strip()
    assert isinstance(result.estimate_hours, int)


def test_async_invoke(model: LocalChatModel) -> None:
    reply = asyncio.run(model.ainvoke([HumanMessage("Say OK.")], max_tokens=8))
    assert isinstance(reply, AIMessage)
    assert reply.usage_metadata is not None and 0 < reply.usage_metadata["output_tokens"] <= 8


def test_a_prompt_longer_than_the_window_is_a_typed_error() -> None:
    small = load_chat_model("local", n_ctx=512, max_tokens=16)
    with pytest.raises(ContextWindowError, match="context window"):
        small.invoke([HumanMessage("word " * 2000)])


def test_a_reply_ends_after_its_code_block_with_the_same_code() -> None:
    from atom_agent.models.stopping import code_replies
    from atom_agent.replies import extract_code

    ask = [HumanMessage("Write a Python function square(x) returning x squared, then explain it.")]
    with code_replies():
        watched = LocalChatModel(max_tokens=300, stop_early=True).invoke(ask)
    assert watched.usage_metadata
    # Not asked for code only, the same greedy reply runs on past the block: a few dozen tokens
    # past the cut show it (the rest of its prose would only take the suite's time).
    past = watched.usage_metadata["output_tokens"] + 24
    plain = LocalChatModel(max_tokens=300, stop_early=True).invoke(ask, max_tokens=past)
    assert watched.response_metadata.get("ended_early") == "code block complete"
    assert watched.text.rstrip().endswith("```")
    assert plain.usage_metadata and watched.usage_metadata
    assert watched.usage_metadata["output_tokens"] < plain.usage_metadata["output_tokens"]
    assert extract_code(watched.text) == extract_code(plain.text) != ""
    assert "ended_early" not in plain.response_metadata


def test_a_module_reply_ends_where_its_tests_begin_with_the_same_code() -> None:
    from atom_agent.models.stopping import code_replies
    from atom_agent.replies import extract_code

    ask = [
        HumanMessage(
            "Write a Python function square(x) returning x squared, and pytest tests for it. "
            "Reply with the whole module in one ```python block, nothing else."
        )
    ]
    with code_replies("module", ["square"]):
        # Streamed: the text comes a few lines behind the decoding, never past the cut.
        chunks = list(LocalChatModel(max_tokens=400, stop_early=True).stream(ask))
    watched = AIMessage(content="".join(c.text for c in chunks),
                        response_metadata=chunks[-1].response_metadata,
                        usage_metadata=chunks[-1].usage_metadata)  # fmt: skip
    assert any(c.text for c in chunks[:-1])
    assert watched.usage_metadata
    # The same greedy reply, not watched, goes on into its tests: the first of them shows it.
    past = watched.usage_metadata["output_tokens"] + 48
    plain = LocalChatModel(max_tokens=400, stop_early=True).invoke(ask, max_tokens=past)
    assert watched.response_metadata.get("ended_early") == "implementation complete, tests follow"
    assert watched.text.rstrip().endswith("```") and "def test" not in watched.text
    assert plain.usage_metadata and watched.usage_metadata
    assert watched.usage_metadata["output_tokens"] < plain.usage_metadata["output_tokens"]
    assert "def test" in plain.text
    assert extract_code(watched.text) == extract_code(plain.text) != ""


def test_a_prompt_that_begins_like_an_earlier_one_prefills_only_what_is_new() -> None:
    chat = LocalChatModel(max_tokens=64, stop_early=True, prefix_cache_mb=256)
    first = [HumanMessage("Write a Python function cube(x) that returns x cubed.")]
    reply = chat.invoke(first)
    chat.invoke([HumanMessage("Write a Python function that reverses a string.")])
    follow_up = [*first, reply, HumanMessage("Now make it accept floats only.")]
    again = chat.invoke(follow_up, temperature=0.4)  # a warm retry continues the saved prefix
    meta = again.response_metadata
    assert again.usage_metadata is not None
    assert meta["prefix_restored"] == 1
    assert 0 < meta["prefill_computed"] < again.usage_metadata["input_tokens"] // 2
    # Without the saved prefixes only the previous call's KV would be reused: most of it again.
    assert meta["prefill_without_prefix_cache"] > 2 * meta["prefill_computed"]


def test_a_greedy_request_gives_the_same_reply_whatever_ran_before() -> None:
    chat = LocalChatModel(max_tokens=32, stop_early=True, prefix_cache_mb=256)
    ask = [HumanMessage("Write a Python function that returns the n-th Fibonacci number.")]
    first = chat.invoke(ask)
    # Other calls leave other KV states and saved prefixes, one of them this very prompt's.
    chat.invoke([*ask, first, HumanMessage("Make it iterative.")], temperature=0.7)
    chat.invoke([HumanMessage("Write a function that reverses a list.")])
    again = chat.invoke(ask)
    assert again.text == first.text
    assert again.response_metadata["prefix_restored"] == 0
    assert again.usage_metadata is not None
    assert again.response_metadata["prefill_computed"] == again.usage_metadata["input_tokens"]


def test_a_sampled_request_gives_the_same_reply_whatever_ran_before() -> None:
    ask = [HumanMessage("Name three colours, one per line.")]
    first = LocalChatModel(max_tokens=40)
    one = first.invoke(ask, temperature=1.0)
    two = first.invoke(ask, temperature=1.0)  # the same request again: another sample
    other = LocalChatModel(max_tokens=40)
    other.invoke([HumanMessage("Say OK.")], temperature=1.0)  # other calls first
    assert other.invoke(ask, temperature=1.0).text == one.text
    assert other.invoke(ask, temperature=1.0).text == two.text
