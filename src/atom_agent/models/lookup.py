"""Calls whose reply copies from its prompt: where prompt-lookup decoding pays.

A repair that hands back the rejected module with a fix, or an edit that rewrites a function
with its docstring, copies long runs of its prompt. Prompt-lookup decoding (llama.cpp's
``LlamaPromptLookupDecoding``) drafts the next tokens from the prompt's n-grams and has the
model verify them in one batch: on such replies it decodes 1.85× as fast on this machine, on
fresh code it is slower (0.80×, ``benchmarks/prompt_lookup.py``). So a call site says what
its reply will do, and a model that can (the embedded one, when its ``prompt_lookup`` is on)
uses it for those calls only; other models ignore it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COPYING: ContextVar[bool] = ContextVar("atom_copying_replies", default=False)


@contextmanager
def copying() -> Iterator[None]:
    """Model calls inside the block write replies that mostly copy from their prompt."""
    token = _COPYING.set(True)
    try:
        yield
    finally:
        _COPYING.reset(token)


def copying_now() -> bool:
    """Whether the current call is made inside :func:`copying`."""
    return _COPYING.get()
