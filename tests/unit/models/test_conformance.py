"""LangChain's standard unit tests for our chat models (``langchain-tests``), without weights.

The unit suite builds models, binds tools, asks for structured-output runnables and reads
LangSmith parameters; none of its tests calls a model. The local model loads its weights on
first call only, and an autouse fixture here makes a load an error, so these tests prove it.
Below the suites, what the integration suite found wrong in our wrapper, pinned on a fake
llama.cpp engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_core.tracers._streaming import _StreamingCallbackHandler
from langchain_tests.unit_tests import ChatModelUnitTests
from pydantic.v1 import BaseModel as BaseModelV1

from atom_agent.models import local
from atom_agent.models.local import LocalChatModel
from atom_agent.testing import ScriptedChatModel


@pytest.fixture(autouse=True)
def _no_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("a unit conformance test loaded the local model's weights")

    monkeypatch.setattr(local, "resolve_local_weights", refuse)
    monkeypatch.setattr(local, "_load", refuse)


class TestLocalChatModelUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[LocalChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False  # one GGUF file a model object; a call's `model` kwarg is refused


class TestScriptedChatModelUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[ScriptedChatModel]:
        return ScriptedChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"responses": ["hello"]}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False


class _Engine:
    """A llama.cpp stand-in: streams `text` in pieces of 3 characters, records each request."""

    def __init__(self, text: str, finish: str = "stop") -> None:
        self.text, self.finish = text, finish
        self.requests: list[dict[str, Any]] = []
        self.last_usage = (7, 3)  # as MeteredLlama counts a streamed reply's tokens

    def create_chat_completion(self, **request: Any) -> Iterator[dict[str, Any]]:
        assert request.pop("stream") is True
        self.requests.append(request)
        yield {"choices": [{"delta": {"role": "assistant"}, "finish_reason": None}]}
        for i in range(0, len(self.text), 3):
            piece = self.text[i : i + 3]
            yield {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
        yield {"choices": [{"delta": {}, "finish_reason": self.finish}]}


def _on(engine: _Engine, **params: Any) -> LocalChatModel:
    chat = LocalChatModel(**params)
    chat._llama = engine
    return chat


@tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return "ok"


class _Listening(BaseCallbackHandler, _StreamingCallbackHandler):
    """A streaming handler, as LangGraph's "messages" stream mode attaches."""

    def tap_output_iter(self, run_id: Any, output: Any) -> Any:
        return output

    def tap_output_aiter(self, run_id: Any, output: Any) -> Any:
        return output


def _added(chunks: list[Any]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert isinstance(total, AIMessageChunk)
    return total


def test_stream_yields_a_chunk_per_decoded_piece_and_the_usage_last() -> None:
    chunks = list(_on(_Engine("Hello, world")).stream("hi"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.text for c in chunks] == ["Hel", "lo,", " wo", "rld", ""]
    assert [c.usage_metadata for c in chunks[:-1]] == [None] * 4
    last = chunks[-1]
    assert last.chunk_position == "last" and last.response_metadata["model_name"]
    assert last.usage_metadata == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    assert _added(chunks).text == "Hello, world"


def test_an_invoke_hands_each_piece_to_the_callbacks_as_chunks_of_the_reply() -> None:
    pieces: list[tuple[str, Any]] = []

    class Pieces(BaseCallbackHandler):
        def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
            chunk = kwargs.get("chunk")
            pieces.append((token, chunk.message if chunk is not None else None))

    reply = _on(_Engine("Hello, world")).invoke("hi", config={"callbacks": [Pieces()]})
    assert [token for token, _ in pieces] == ["Hel", "lo,", " wo", "rld", ""]
    # The chunks are the reply's: its id, adding up to it, the usage on the last.
    chunks = [chunk for _, chunk in pieces]
    assert {c.id for c in chunks} == {reply.id}
    total = _added(chunks)
    assert total.text == reply.text and total.usage_metadata == reply.usage_metadata
    # A tool call's pieces come as tokens (a progress view shows them), with no chunk.
    pieces.clear()
    engine = _Engine('{"name": "write_file", "arguments": {"path": "a.py", "content": "x"}}')
    bound = _on(engine).bind_tools([write_file], tool_choice="any")
    call = bound.invoke("write a.py", config={"callbacks": [Pieces()]})
    assert "".join(token for token, _ in pieces) == engine.text
    assert {chunk for _, chunk in pieces} == {None} and call.tool_calls[0]["name"] == "write_file"


def test_a_cut_off_tool_call_stays_invalid_when_streamed_or_listened_to() -> None:
    cut = '{"name": "write_file", "arguments": {"path": "a.py", "content": "de'
    bound = _on(_Engine(cut, finish="length")).bind_tools([write_file], tool_choice="any")
    streamed = list(bound.stream("write a.py"))
    listened = bound.invoke("write a.py", config={"callbacks": [_Listening()]})
    for reply in (streamed[0], listened):
        assert not reply.tool_calls
        assert reply.invalid_tool_calls[0]["args"] == cut


def test_stop_sequences_of_the_model_apply_unless_a_call_gives_its_own() -> None:
    engine = _Engine("Hello")
    chat = _on(engine, stop=["you"])
    chat.invoke("hi")
    chat.invoke("hi", stop=["me"])
    assert [r["stop"] for r in engine.requests] == [["you"], ["me"]]
    assert chat._get_ls_params()["ls_stop"] == ["you"]
    assert chat._get_ls_params(stop=["me"])["ls_stop"] == ["me"]


def test_structured_output_of_a_pydantic_v1_schema_is_an_instance() -> None:
    class Joke(BaseModelV1):
        """Joke to tell user."""

        setup: str
        punchline: str

    engine = _Engine('{"name": "Joke", "arguments": {"setup": "Why?", "punchline": "So."}}')
    joke = _on(engine).with_structured_output(Joke).invoke("a joke")
    assert isinstance(joke, Joke) and joke.punchline == "So."


def test_a_streamed_tool_call_is_a_tool_call() -> None:
    engine = _Engine('{"name": "write_file", "arguments": {"path": "a.py", "content": "x"}}')
    bound = _on(engine).bind_tools([write_file], tool_choice="any")
    (chunk,) = bound.stream("write a.py")  # known once its JSON is complete
    assert [(c["name"], c["args"]) for c in chunk.tool_calls] == [
        ("write_file", {"path": "a.py", "content": "x"})
    ]
