"""llama.cpp's ``Llama``, metered: what each call really prefilled, and slim saved states.

Imported only when the local model loads (llama-cpp-python is an optional extra).

- ``evaluated`` lists the sizes of the batches the model evaluated; the first batch of a call
  is the part of its prompt that was *computed* (the rest came from the KV cache of the
  previous call, or of an earlier one through the prefix cache).
- ``stopping_with(criterion)`` adds a stopping criterion to the calls made inside it: the
  chat API takes none, and the chat handler passes only its template's own to
  ``create_completion``.
- ``from_scratch()``: calls inside it evaluate their prompt from the first token, in the same
  batches every time, and restore no saved prefix. llama.cpp's logits depend slightly on how
  a prompt was split into batches, so a greedy reply continued from another call's KV state
  can differ from the same request asked fresh (seen: the agent's "one plain call" of a task
  came out as other code than the baseline's identical call). Greedy calls are made so: the
  same request gives the same reply, whatever ran before. Their state is still saved for
  the calls that continue them.
- ``save_state`` keeps one row of logits instead of llama-cpp-python's ``n_batch × vocab``
  copy (311 MB for Qwen2.5's 151,936-token vocabulary): a restored state's logits are never
  sampled from, because ``generate`` evaluates a prompt's last token again after a prefix
  match. States then cost what their KV cells cost (≈ 28 KB a token for the 1.5B model).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_cpp import Llama, LlamaState, StoppingCriteriaList
from llama_cpp import llama_cpp as _c


class MeteredLlama(Llama):
    """A ``Llama`` that records the batches it evaluates and saves slim states."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.evaluated: list[int] = []
        self.restored = 0
        self.without_prefix_cache = 0
        self._extra_stop: Callable[[Any, Any], bool] | None = None
        self._scratch = False
        self.prefilled_at = 0.0
        """When the current call's first batch (its prompt) was evaluated (``perf_counter``)."""
        self.prompt_size = 0
        self.generated = 0

    @contextmanager
    def stopping_with(self, criterion: Callable[[Any, Any], bool]) -> Iterator[None]:
        """Calls inside the block also stop when `criterion(token_ids, logits)` is true."""
        self._extra_stop = criterion
        try:
            yield
        finally:
            self._extra_stop = None

    @contextmanager
    def from_scratch(self) -> Iterator[None]:
        """Calls inside the block prefill their whole prompt (see the module docstring)."""
        self._scratch = True
        try:
            yield
        finally:
            self._scratch = False

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        """``Llama.create_completion``, with the criterion of :meth:`stopping_with` added.

        Also records ``without_prefix_cache``: the prompt tokens this call would compute if
        only the previous call's KV cache were reused (llama.cpp's own reuse), to set beside
        what it did compute (the KV contents after a call are its prompt and reply either
        way, so the figure is exact, not an estimate); and ``last_usage`` (prompt, completion
        tokens), which a streamed completion does not report.
        """
        self.prefilled_at = 0.0
        self.generated = 0
        prompt = kwargs.get("prompt", args[0] if args else None)
        if isinstance(prompt, list) and prompt:
            shared = Llama.longest_token_prefix(self._input_ids[: self.n_tokens].tolist(), prompt)
            self.without_prefix_cache = len(prompt) - min(shared, len(prompt) - 1)
            self.prompt_size = len(prompt)
        if self._extra_stop is not None:
            given = kwargs.get("stopping_criteria") or []
            kwargs["stopping_criteria"] = StoppingCriteriaList([*given, self._extra_stop])
        if not self._scratch:
            return super().create_completion(*args, **kwargs)
        if isinstance(prompt, list) and prompt:
            self.without_prefix_cache = len(prompt)
        if kwargs.get("stream"):
            # Decoding happens as the chunks are read: the fresh start must wrap the reading.
            return self._streamed_from_scratch(args, kwargs)
        with self._fresh():
            return super().create_completion(*args, **kwargs)

    def _streamed_from_scratch(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Iterator[Any]:
        with self._fresh():
            yield from super().create_completion(*args, **kwargs)

    @contextmanager
    def _fresh(self) -> Iterator[None]:
        """A call from the first token, no prefix restored; its state saved after it."""
        cache, self.cache = self.cache, None
        self.reset()  # type: ignore[no-untyped-call]
        try:
            yield
        finally:
            self.cache = cache
        if cache is not None and self.n_tokens:
            cache[self._input_ids[: self.n_tokens].tolist()] = self.save_state()

    @property
    def last_usage(self) -> tuple[int, int]:
        """(prompt, completion) tokens of the last completion, as its ``usage`` counts them."""
        return self.prompt_size, self.generated

    def generate(  # type: ignore[override]  # the same call, its keywords passed through
        self, tokens: Sequence[int], **kwargs: Any
    ) -> Iterator[int]:
        """``Llama.generate``, counting the reply's tokens as ``create_completion`` does."""
        for token in super().generate(tokens, **kwargs):
            if not _c.llama_vocab_is_eog(self._model.vocab, token):
                self.generated += 1
            yield token

    def eval(self, tokens: Sequence[int]) -> None:
        """Evaluate `tokens` (recording how many)."""
        self.evaluated.append(len(tokens))
        super().eval(tokens)
        if not self.prefilled_at:
            self.prefilled_at = time.perf_counter()

    def load_state(self, state: LlamaState) -> None:
        """Restore a saved state (counted: a prefix-cache hit)."""
        self.restored += 1
        super().load_state(state)

    def save_state(self) -> LlamaState:
        """The KV state and token ids, with one row of logits (see the module docstring)."""
        size = _c.llama_state_get_size(self._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(_c.llama_state_get_data(self._ctx.ctx, buffer, size))
        if written > int(size):
            raise RuntimeError("llama.cpp wrote more state than it announced")
        return LlamaState(
            input_ids=self.input_ids.copy(),
            scores=self._scores[-1:, :].copy(),
            n_tokens=self.n_tokens,
            llama_state=ctypes.string_at(buffer, written),
            llama_state_size=written,
            seed=self._seed,
        )
