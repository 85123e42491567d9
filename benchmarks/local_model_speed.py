"""Prefill and decode speed of the embedded local model (tokens per second).

Run: OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/local_model_speed.py

Prefill: a ~600-token prompt with max_tokens=1 after a KV-cache reset. Decode: the extra time
of generating 128 tokens over that prefill. Figures depend on the cores free at the time.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from atom_agent.models.weights import resolve_local_weights


def load_llama(**options: Any) -> Any:
    """The embedded weights in a plain ``Llama`` (4k window, every core), with `options`."""
    from llama_cpp import Llama

    threads = os.cpu_count() or 1
    return Llama(
        model_path=str(resolve_local_weights()),
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        seed=0,
        verbose=False,
        **options,
    )


def main() -> None:
    started = time.perf_counter()
    llama = load_llama()
    print(f"load: {time.perf_counter() - started:.1f}s, threads={os.cpu_count() or 1}")
    text = " ".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(60))
    prompt = f"<|im_start|>user\n{text}\nExplain this code.<|im_end|>\n<|im_start|>assistant\n"
    n_prompt = len(llama.tokenize(prompt.encode()))
    prefill, decode = [], []
    for _ in range(3):
        llama.reset()
        t0 = time.perf_counter()
        llama.create_completion(prompt, max_tokens=1, temperature=0.0)
        t_prefill = time.perf_counter() - t0
        llama.reset()
        t0 = time.perf_counter()
        out = llama.create_completion(prompt, max_tokens=128, temperature=0.0)
        t_total = time.perf_counter() - t0
        n_out = out["usage"]["completion_tokens"]
        prefill.append(n_prompt / t_prefill)
        decode.append((n_out - 1) / max(1e-9, t_total - t_prefill))
    print(f"prompt tokens: {n_prompt}")
    print(f"prefill: {statistics.median(prefill):.1f} tok/s (median of 3)")
    print(f"decode:  {statistics.median(decode):.1f} tok/s (median of 3)")


if __name__ == "__main__":
    main()
