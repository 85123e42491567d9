"""Prompt-lookup decoding on the embedded model: decode speed with and without, side by side.

Run (idle machine; ~5 min): .venv/bin/python benchmarks/prompt_lookup.py [--calls 4]

llama-cpp-python's ``LlamaPromptLookupDecoding`` drafts tokens from n-gram matches in the
prompt and has the model verify them in one batch: it pays when the reply copies from the
prompt (a retry that rewrites the previous candidate with a fix) and costs when it does not
(a fresh draft). Two kinds of call, each asked greedy of the same weights loaded twice (one
with the draft model, which llama-cpp-python runs with ``logits_all=True``), alternating:

- retry: the plain prompt of a task, the model's own answer, and a note that one check
  failed; the reply is the whole module again (mostly copied);
- fresh: the plain prompt alone.

Prints tokens/s per call and the median ratio per kind; greedy replies must be identical
(speculative decoding only changes the speed), which the script checks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.local_model_speed import load_llama  # noqa: E402

from atom_agent.prompts import PLAIN_TASK  # noqa: E402

TASKS = [
    "Write word_counts(text: str) -> dict[str, int] that counts each lower-cased word "
    "(letters only). Include pytest tests.",
    "Write a Stack class with push(x), pop() (IndexError when empty), peek() and __len__.",
    "Write chunk(items: list, size: int) -> list[list] that splits items into lists of at "
    "most size items; size < 1 raises ValueError.",
    "Write roman(n: int) -> str that converts 1..3999 to a Roman numeral; other n raise "
    "ValueError.",
]
RETRY_NOTE = (
    "Your code was run against the task's checks: 1 of them failed (the first example gave "
    "a different result). Write the whole module again, fixed, in one ```python block."
)


def _load(draft: bool) -> Any:
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    if not draft:
        return load_llama()
    # llama-cpp-python sizes its logits buffer by the logits_all *argument* (a draft model
    # only sets the flag): without it, a verified batch past n_batch tokens overflows it.
    return load_llama(draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10), logits_all=True)


def _ask(llama: Any, messages: list[dict[str, str]]) -> tuple[str, int, float]:
    llama.reset()
    started = time.perf_counter()
    out = llama.create_chat_completion(messages=messages, temperature=0.0, max_tokens=500)
    seconds = time.perf_counter() - started
    return (
        out["choices"][0]["message"]["content"] or "",
        int(out["usage"]["completion_tokens"]),
        seconds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=len(TASKS))
    args = parser.parse_args()
    base, lookup = _load(False), _load(True)
    ratios: dict[str, list[float]] = {"retry": [], "fresh": []}
    for task in TASKS[: args.calls]:
        fresh = [{"role": "user", "content": PLAIN_TASK.format(task=task)}]
        answer, _, _ = _ask(base, fresh)
        retry = [*fresh, {"role": "assistant", "content": answer},
                 {"role": "user", "content": RETRY_NOTE}]  # fmt: skip
        for kind, messages in (("fresh", fresh), ("retry", retry)):
            text_a, tokens_a, secs_a = _ask(base, messages)
            text_b, tokens_b, secs_b = _ask(lookup, messages)
            same = "same reply" if text_a == text_b else "REPLIES DIFFER"
            speed_a, speed_b = tokens_a / secs_a, tokens_b / secs_b
            ratios[kind].append(speed_b / speed_a)
            print(
                f"{kind:5} {tokens_a:4d} tok: plain {speed_a:5.1f} tok/s, "
                f"prompt lookup {speed_b:5.1f} tok/s ({speed_b / speed_a:.2f}x), {same}",
                flush=True,
            )
    for kind, values in ratios.items():
        print(f"{kind}: median {statistics.median(values):.2f}x over {len(values)} calls "
              "(tokens/s with prompt lookup / without; whole call, prefill included)")  # fmt: skip


if __name__ == "__main__":
    main()
