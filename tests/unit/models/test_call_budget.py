"""A model call never asks for more than the run's budget has left, and stops when time is up.

The embedded model on a llama.cpp stand-in, a served ``openai:`` model on a loopback server
that records what it was asked, and the budget handler on a scripted model.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.ai import UsageMetadata

from atom_agent import budget as budgets
from atom_agent.budget import RunBudget, watching
from atom_agent.errors import BudgetExhaustedError, TimeLimitReached
from atom_agent.models.local import LocalChatModel
from atom_agent.models.registry import load_chat_model
from atom_agent.testing import ScriptedChatModel


class _Engine:
    """A llama.cpp stand-in: decodes `words` one token a second on `clock`, under criteria."""

    def __init__(self, clock: list[float], words: int = 50, finish: str = "length") -> None:
        self.clock, self.words, self.finish = clock, words, finish
        self.requests: list[dict[str, Any]] = []
        self._criterion: Any = None

    @contextmanager
    def stopping_with(self, criterion: Any) -> Iterator[None]:
        self._criterion = criterion
        try:
            yield
        finally:
            self._criterion = None

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        made, finish = 0, self.finish
        while made < min(self.words, request["max_tokens"]):
            made += 1
            self.clock[0] += 1.0
            if self._criterion is not None and self._criterion(list(range(made)), None):
                finish = "stop"
                break
        return {
            "choices": [{"message": {"content": "word " * made}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": made},
        }


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(budgets, "wall_clock", lambda: now[0])
    return now


def _local(engine: _Engine) -> LocalChatModel:
    chat = LocalChatModel(max_tokens=1024)
    chat._llama = engine
    return chat


def test_the_embedded_models_max_tokens_is_what_the_budget_has_left(clock: list[float]) -> None:
    engine = _Engine(clock, words=5, finish="stop")
    budget = RunBudget(max_tokens=100, used={"total_tokens": 40})
    with watching(budget):
        reply = _local(engine).invoke([HumanMessage("hi")])
    # 60 left, less the prompt (the stand-in has no tokenizer: 8 tokens of template marks).
    assert engine.requests[0]["max_tokens"] == 60 - 8
    assert reply.text.startswith("word")
    assert budget.tokens() == 40 + 25  # its prompt and reply counted


def test_a_reply_the_token_budget_cut_short_ends_the_run_and_still_counts(
    clock: list[float],
) -> None:
    engine = _Engine(clock, words=500, finish="length")
    budget = RunBudget(max_tokens=100, used={"total_tokens": 40})
    with watching(budget), pytest.raises(BudgetExhaustedError, match="cut at the 52 tokens left"):
        _local(engine).invoke([HumanMessage("hi")])
    assert budget.tokens() == 40 + 20 + 52
    assert budget.exhausted() is not None  # the next call would be refused


def test_a_prompt_that_takes_what_is_left_is_never_sent(clock: list[float]) -> None:
    engine = _Engine(clock)
    budget = RunBudget(max_tokens=100, used={"total_tokens": 95})
    with watching(budget), pytest.raises(BudgetExhaustedError, match="does not fit"):
        _local(engine).invoke([HumanMessage("hi")])
    assert engine.requests == []


def test_the_embedded_model_stops_decoding_when_the_time_is_up(clock: list[float]) -> None:
    engine = _Engine(clock, words=500)
    # 30 of the run's 40 seconds are gone: the reply is stopped after 10 tokens (seconds).
    budget = RunBudget(max_wall_seconds=40.0, started_at=clock[0] - 30.0)
    with watching(budget), pytest.raises(BudgetExhaustedError, match="stopped mid-reply"):
        _local(engine).invoke([HumanMessage("hi")])
    assert clock[0] == 1010.0
    assert budget.tokens() == 20 + 10


def test_a_call_is_refused_before_it_is_made_once_the_budget_is_spent(clock: list[float]) -> None:
    usage = UsageMetadata(input_tokens=50, output_tokens=10, total_tokens=60)
    model = ScriptedChatModel(responses=[AIMessage(content="a", usage_metadata=usage)], cycle=True)
    budget = RunBudget(max_tokens=100)
    with watching(budget):
        model.invoke("one")
        model.invoke("two")  # 60 spent: allowed
        with pytest.raises(BudgetExhaustedError, match="120 of 100 tokens"):
            model.invoke("three")
    assert len(model.calls) == 2 and budget.spent["total_tokens"] == 120
    model.invoke("outside the run's nodes: no budget")
    assert len(model.calls) == 3


def test_the_time_limit_refuses_with_its_own_kind_and_a_hard_budget_with_the_base_kind(
    clock: list[float],
) -> None:
    # The time limit refuses model calls only (a sampler may stop drawing and go on);
    # tokens, cost and the wall clock end the node. Each is raised as its own kind.
    model = ScriptedChatModel(responses=[AIMessage(content="a")], cycle=True)
    with watching(RunBudget(started_at=1000.0, calls_until=1010.0, calls_until_why="5 x")):
        model.invoke("before the limit")
        clock[0] = 1010.0
        with pytest.raises(TimeLimitReached, match=r"time limit: 10\.0s of 10\.0s \(5 x\)"):
            model.invoke("after it")
    both = RunBudget(started_at=1000.0, max_wall_seconds=5.0, calls_until=1005.0)
    with watching(both), pytest.raises(BudgetExhaustedError, match="wall-clock") as raised:
        model.invoke("both spent: the hard budget says so")
    assert not isinstance(raised.value, TimeLimitReached)
    assert len(model.calls) == 1


# --- a served model ------------------------------------------------------------------------

_REPLY = {
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hello"}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}  # fmt: skip


def _streamed(reply: dict[str, Any]) -> bytes:
    """`reply` as a server streams it: its content, then the usage, then [DONE]."""
    choice = reply["choices"][0]
    head = {
        **reply,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": choice["message"], "finish_reason": None}],
    }
    tail = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    head.pop("usage")
    events = "".join(f"data: {json.dumps(e)}\n\n" for e in (head, tail))
    return (events + "data: [DONE]\n\n").encode()


class _Recording(http.server.BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []
    delay = 0.0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        type(self).bodies.append(body)
        time.sleep(self.delay)
        try:
            self.send_response(200)
            streamed = bool(body.get("stream"))
            kind = "text/event-stream" if streamed else "application/json"
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(_streamed(_REPLY) if streamed else json.dumps(_REPLY).encode())
        except OSError:  # the client gave up (timed out)
            pass

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def _server(delay: float) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    handler = type("Handler", (_Recording,), {"bodies": [], "delay": delay})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler.bodies
    finally:
        server.shutdown()
        server.server_close()


def test_a_served_models_max_tokens_is_capped_at_what_is_left() -> None:
    with _server(0.0) as (url, bodies):
        model = load_chat_model("openai:m", env={}, base_url=url, max_retries=0)
        budget = RunBudget(max_tokens=1000, used={"total_tokens": 700})
        with watching(budget):
            model.invoke([HumanMessage("hi")])
        model.invoke([HumanMessage("no budget")])
    asked = [b.get("max_completion_tokens", b.get("max_tokens")) for b in bodies]
    assert asked == [300, 2048]  # the served default when the run has no budget
    assert budget.tokens() == 712


def test_a_served_call_times_out_when_the_runs_time_is_up_and_is_not_retried() -> None:
    with _server(3.0) as (url, bodies):
        model = load_chat_model("openai:m", env={}, base_url=url)  # retries as configured
        budget = RunBudget(max_wall_seconds=10.0, started_at=time.time() - 9.5)
        started = time.monotonic()
        with watching(budget), pytest.raises(BudgetExhaustedError, match="timed out"):
            model.invoke([HumanMessage("hi")])
        assert time.monotonic() - started < 2.0
        assert len(bodies) == 1
