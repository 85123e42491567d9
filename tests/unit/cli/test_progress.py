"""The live view: a reply being decoded grows on one line, gone when it is over."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from atom_agent.cli.progress import Progress
from atom_agent.models.local import LocalChatModel
from atom_agent.run import TokenRelay


def _console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=80, color_system=None), out


def test_a_reply_grows_on_one_line_that_is_erased_when_it_ends() -> None:
    console, out = _console(terminal=True)
    progress = Progress(console)
    for piece in ["def ", "square", "(x):"]:
        progress("token", {"run": "r1", "text": piece, "last": False})
    shown = out.getvalue()
    frames = shown.split("\r\x1b[2K")[1:]
    assert frames == [
        "  … model: 1 tokens def",
        "  … model: 2 tokens def square",
        "  … model: 3 tokens def square(x):",
    ]
    progress("token", {"run": "r1", "text": "", "last": True})
    assert out.getvalue().endswith("\r\x1b[2K")  # erased
    progress("custom", {"event": "run.finish", "status": "done", "reason": "ok"})
    assert out.getvalue().endswith("done: ok\n")


def test_other_output_erases_the_growing_line_first() -> None:
    console, out = _console(terminal=True)
    progress = Progress(console)
    progress("token", {"run": "r1", "text": "x = 1", "last": False})
    progress("custom", {"event": "tool_call", "tool_name": "run_tests", "args": {}})
    assert "x = 1\r\x1b[2K  → run_tests" in out.getvalue()


def test_a_log_file_gets_no_growing_line() -> None:
    console, out = _console(terminal=False)
    progress = Progress(console)
    progress("token", {"run": "r1", "text": "def f", "last": False})
    progress("token", {"run": "r1", "text": "", "last": True})
    assert out.getvalue() == ""


class _Engine:
    """A llama.cpp stand-in streaming two pieces."""

    last_usage = (5, 2)

    def create_chat_completion(self, **request: Any) -> Iterator[dict[str, Any]]:
        for piece in ("def ", "f(): pass"):
            yield {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}


def test_a_run_relays_each_piece_the_embedded_model_decodes() -> None:
    events: list[tuple[str, Any]] = []
    chat = LocalChatModel()
    chat._llama = _Engine()
    chat.invoke("hi", config={"callbacks": [TokenRelay(lambda *e: events.append(e))]})
    pieces = [(e["text"], e["last"]) for mode, e in events if mode == "token"]
    assert pieces[:2] == [("def ", False), ("f(): pass", False)]
    assert pieces[-1] == ("", True)  # the reply is over: the line goes
