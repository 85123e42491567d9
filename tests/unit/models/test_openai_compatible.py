"""`openai:` models on any OpenAI-compatible server: base URL, keys, and a dead or odd server."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from atom_agent.errors import ContextWindowError, MissingCredentialsError, ModelSpecError
from atom_agent.models.failures import model_failure
from atom_agent.models.registry import SERVED_KEY, check_usable, load_chat_model, local_address


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://192.168.0.7:1234/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://8.8.8.8/v1", False),
        ("https://my-vllm.example.com/v1", False),
    ],
)
def test_loopback_and_private_addresses_need_no_key(url: str, local: bool) -> None:
    assert local_address(url) is local


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "ftp://host/v1", "http:///v1", ""])
def test_a_base_url_that_is_no_http_url_is_refused(url: str) -> None:
    with pytest.raises(ModelSpecError, match="not an http"):
        local_address(url)


def test_a_served_model_needs_no_key_on_loopback() -> None:
    model = load_chat_model(
        "openai:qwen2.5-coder-1.5b-instruct", env={}, base_url="http://127.0.0.1:8080/v1"
    )
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == "http://127.0.0.1:8080/v1"
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == SERVED_KEY
    assert model.model_name == "qwen2.5-coder-1.5b-instruct"
    # A self-hosted server decodes to its context's end unless capped; CPUs are slow.
    assert model.max_tokens == 2048 and model.request_timeout == 600.0


def test_a_key_that_is_set_is_sent_to_the_server_too() -> None:
    model = load_chat_model(
        "openai:m", env={"OPENAI_API_KEY": "sk-test"}, base_url="http://127.0.0.1:9/v1"
    )
    assert isinstance(model, ChatOpenAI) and model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-test"


def test_a_public_server_still_needs_its_key() -> None:
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        check_usable("openai:m", env={}, base_url="https://my-vllm.example.com/v1")


def test_base_url_is_only_for_openai_specs() -> None:
    with pytest.raises(ModelSpecError, match="openai:<served model name>"):
        check_usable("anthropic:claude", env={}, base_url="http://127.0.0.1:8080/v1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_server_is_one_line() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
    with pytest.raises(Exception) as info:
        model.invoke([HumanMessage("hi")])
    line = model_failure(info.value)
    assert line is not None and "cannot be reached" in line and "127.0.0.1" in line
    assert "\n" not in line


class _Odd(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b"<html>not an API</html>"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def odd_server(request: pytest.FixtureRequest) -> Iterator[str]:
    status, body = request.param
    handler = type("Handler", (_Odd,), {"status": status, "body": body})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("odd_server", "said"),
    [
        ((500, b'{"error": {"message": "model crashed"}}'), "HTTP 500"),
        ((200, b"<html>not an API</html>"), "the model server"),
        ((200, b'{"choices": "nope"}'), "the model server"),
    ],
    indirect=["odd_server"],
)
def test_a_server_answering_garbage_is_one_line(odd_server: str, said: str) -> None:
    model = load_chat_model("openai:m", env={}, base_url=odd_server, max_retries=0)
    with pytest.raises(Exception) as info:
        model.invoke([HumanMessage("hi")])
    line = model_failure(info.value)
    assert line is not None and said in line, (type(info.value), info.value)


@pytest.mark.parametrize(
    "odd_server",
    [
        (
            400,
            b'{"error": {"code": 400, "message": "the request exceeds the available context '
            b'size, try increasing it", "type": "exceed_context_size_error"}}',
        ),
        (
            400,
            b'{"error": {"message": "This model\'s maximum context length is 8192 tokens", '
            b'"code": "context_length_exceeded"}}',
        ),
    ],
    indirect=True,
)
def test_a_prompt_too_long_for_the_served_model_is_a_context_window_error(odd_server: str) -> None:
    model = load_chat_model("openai:m", env={}, base_url=odd_server, max_retries=0)
    with pytest.raises(ContextWindowError, match="refused the prompt"):
        model.invoke([HumanMessage("hi")])


@pytest.mark.parametrize("odd_server", [(400, b'{"error": {"message": "bad tool"}}')],
                         indirect=True)  # fmt: skip
def test_another_bad_request_stays_what_it_is(odd_server: str) -> None:
    import openai

    model = load_chat_model("openai:m", env={}, base_url=odd_server, max_retries=0)
    with pytest.raises(openai.BadRequestError):
        model.invoke([HumanMessage("hi")])


_CUT = json.dumps({
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "length",
                 "message": {"role": "assistant", "content": '{"steps": [{"id": "a", "ti'}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2048, "total_tokens": 2058},
}).encode()  # fmt: skip


@pytest.mark.parametrize("odd_server", [(200, _CUT)], indirect=True)
def test_a_structured_reply_cut_off_at_max_tokens_is_a_reply_that_does_not_parse(
    odd_server: str,
) -> None:
    from pydantic import BaseModel

    from atom_agent.models.structured import invoke_structured

    class Steps(BaseModel):
        steps: list[dict[str, str]]

    model = load_chat_model("openai:m", env={}, base_url=odd_server, max_retries=0)
    reply = invoke_structured(model.with_structured_output(Steps), [HumanMessage("plan")])
    assert reply.parsed is None and reply.raw is not None
    assert reply.raw.response_metadata.get("finish_reason") == "length"


class _Streaming(http.server.BaseHTTPRequestHandler):
    """Streams `pieces` as server-sent events, one per write; counts what it could send."""

    pieces: list[str] = []
    sent: list[int] = []
    asked: list[dict[str, object]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.asked.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        sent = 0
        try:
            for piece in self.pieces:
                event = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                         "model": "m", "choices": [{"index": 0, "delta": {"content": piece},
                                                    "finish_reason": None}]}  # fmt: skip
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                sent += 1
                threading.Event().wait(0.002)
            done = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": sent,
                              "total_tokens": 7 + sent}}  # fmt: skip
            self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.sent.append(sent)

    def log_message(self, *_: object) -> None:
        pass


def _streaming(pieces: list[str]) -> tuple[str, type[_Streaming], http.server.HTTPServer]:
    handler = type("Handler", (_Streaming,), {"pieces": pieces, "sent": [], "asked": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", handler, server


def _tokens(text: str) -> list[str]:
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def test_a_served_reply_asked_for_code_ends_at_its_complete_block() -> None:
    from atom_agent.models.stopping import code_replies

    reply = "```python\ndef f(x):\n    return x + 1\n```\n" + "This adds one. " * 400
    url, handler, server = _streaming(_tokens(reply))
    try:
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        with code_replies("code"):
            out = model.invoke([HumanMessage("write f")])
        assert str(out.content).startswith("```python\ndef f(x):\n    return x + 1\n```")
        assert "This adds one" not in str(out.content)
        assert out.response_metadata["ended_early"] == "code block complete"
        assert out.usage_metadata is not None and 0 < out.usage_metadata["output_tokens"] < 30
        assert out.response_metadata["usage_estimated"] is True
        server.shutdown()  # waits for the handler: the server stopped well before the end
        assert handler.sent and handler.sent[0] < len(_tokens(reply)) // 2
        assert handler.asked[0]["stream"] is True
    finally:
        server.server_close()


def test_a_served_reply_that_loops_ends_and_one_that_ends_keeps_the_servers_usage() -> None:
    looping = "x = 1\n" + "assert f(1) == 1\n" * 300
    url, handler, server = _streaming(_tokens(looping))
    try:
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        out = model.invoke([HumanMessage("write f")])
        assert out.response_metadata["ended_early"] == "reply repeats itself"
        assert str(out.content).count("assert f(1) == 1") < 20
    finally:
        server.shutdown()
        server.server_close()
    url, handler, server = _streaming(_tokens("def f(x):\n    return x\n"))
    try:
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        out = model.invoke([HumanMessage("write f")])
        assert out.content == "def f(x):\n    return x\n"
        assert "ended_early" not in out.response_metadata
        assert out.usage_metadata is not None and out.usage_metadata["input_tokens"] == 7
        assert out.response_metadata["finish_reason"] == "stop"
    finally:
        server.shutdown()
        server.server_close()


def test_a_served_structured_reply_that_loops_ends_and_does_not_parse() -> None:
    from pydantic import BaseModel

    from atom_agent.models.structured import invoke_structured

    class Verdict(BaseModel):
        met: bool
        why: str

    looping = '{"met": true, "why": "' + "it adds the numbers. " * 400 + '"}'
    url, handler, server = _streaming(_tokens(looping))
    try:
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        reply = invoke_structured(model.with_structured_output(Verdict), [HumanMessage("j")])
        assert reply.parsed is None and reply.raw is not None  # as if cut at max_tokens
        assert reply.raw.response_metadata["ended_early"] == "reply repeats itself"
        server.shutdown()
        assert handler.sent[0] < len(_tokens(looping)) // 2  # the server stopped early
        assert "response_format" in handler.asked[0]
    finally:
        server.server_close()
    url, handler, server = _streaming(_tokens('{"met": true, "why": "it adds"}'))
    try:
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        reply = invoke_structured(model.with_structured_output(Verdict), [HumanMessage("j")])
        assert reply.parsed == Verdict(met=True, why="it adds")  # a whole reply parses
    finally:
        server.shutdown()
        server.server_close()


def test_a_served_tool_call_is_never_streamed_or_cut() -> None:
    from langchain_core.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    call = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "c1", "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}  # fmt: skip
    handler = type("Handler", (_Odd,), {"status": 200, "body": json.dumps(call).encode()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        reply = model.bind_tools([add]).invoke([HumanMessage("1 + 2?")])
        assert reply.tool_calls[0]["args"] == {"a": 1, "b": 2}  # asked and answered whole
    finally:
        server.shutdown()
        server.server_close()
