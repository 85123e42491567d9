"""The embedded model's chunks of a reply the early stop watches add up to the reply it gives.

No weights: the decoded pieces are fed to the same watch and chunker ``_stream`` uses, in
every split, and the reply is what ``_generate`` would make of the decoded text.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage

from atom_agent.models.local import _Shown
from atom_agent.models.stopping import ReplyWatch

MODULE_WITH_TESTS = (
    'Here is the module:\n\n```python\nimport math\n\n\ndef square(x):\n    """x times x."""\n'
    "    return x * x\n\n\ndef hypot(a, b):\n    return math.sqrt(square(a) + square(b))\n\n\n"
    "def test_square():\n    assert square(3) == 9\n\n\ndef test_hypot():\n"
    "    assert hypot(3, 4) == 5\n```\n\nThe tests check both functions.\n"
)
LOOPING = "```python\ndef f(x):\n    return x\n\n" + "assert f(1) == 1\nassert f(2) == 2\n" * 12
PLAIN_CODE = "```python\ndef square(x):\n    return x * x\n```\n"


def decode(text: str, watch: ReplyWatch, seed: int) -> tuple[list[str], str]:
    """Feed `text` in random pieces until the watch ends it: the chunks' texts, the reply."""
    rng, shown = random.Random(seed), _Shown(SimpleNamespace(allowed=None, watch=watch))
    decoded, chunks, at = "", [], 0
    while at < len(text):
        piece = text[at : at + rng.randint(1, 6)]
        at += len(piece)
        decoded += piece
        chunk = shown.chunk(piece)
        assert chunk is not None
        chunks.append(chunk.text)
        if watch.done(decoded):
            break
    reply = watch.reply(decoded)
    chunks.append(shown.last(AIMessage(content=reply)).text)
    return chunks, reply


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize(
    ("text", "expecting", "names", "reason"),
    [
        (MODULE_WITH_TESTS, "module", ("square", "hypot"), "implementation complete, tests follow"),
        (LOOPING, "module", ("g",), "reply repeats itself"),
        (PLAIN_CODE, "code", (), "code block complete"),
        (MODULE_WITH_TESTS, "module", ("absent",), ""),
    ],
)
def test_a_watched_reply_streams_its_text_and_the_chunks_add_up_to_the_reply(
    seed: int, text: str, expecting: str, names: tuple[str, ...], reason: str
) -> None:
    watch = ReplyWatch(expecting=expecting, names=names)  # type: ignore[arg-type]
    chunks, reply = decode(text, watch, seed)
    assert watch.reason == reason
    assert "".join(chunks) == reply
    if reason == "implementation complete, tests follow":
        assert "def test_" not in reply and reply.endswith("```")
    # The text comes while decoding, not all in the last chunk.
    if reply.count("\n") > 6:
        assert len("".join(chunks[:-1])) > len(reply) // 3
