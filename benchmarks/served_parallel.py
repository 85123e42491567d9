"""Two requests at once on `llama-server` against one at a time: what batching buys on this machine.

An attempt's calls that do not depend on each other (the contract and the witnesses) run one
after another on the embedded model. llama.cpp's server decodes several slots in one batch
(``--parallel``); on a memory-bound CPU a batch of two costs less than two single decodes. This
prints, for the same prompts, the wall seconds one at a time (one slot) and two at a time (two
slots), the tokens per second of each and their ratio, all measured in this run:

    python benchmarks/served_parallel.py --server PATH/TO/llama-server [--requests 4 --tokens 160]

The binary is the one `make llama-server` builds (its path is in ``.venv/llama-server.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]

from tests.servers import free_port, stop, wait_http_ok  # noqa: E402

from atom_agent.models.weights import resolve_local_weights  # noqa: E402

PROMPTS = (
    "Write a Python function merge_ranges(pairs) that merges overlapping closed ranges.",
    "Write a Python class Stack with push, pop (IndexError when empty) and peek.",
    "Write a Python function to_roman(n) for 1 <= n <= 3999.",
    "Write a Python function word_freq(text) returning a dict of lower-case word counts.",
)


def _ask(base: str, prompt: str, tokens: int) -> int:
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": tokens,
            "temperature": 0, "ignore_eos": True}  # fmt: skip
    request = urllib.request.Request(
        f"{base}/v1/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=900) as response:
        return int(json.loads(response.read())["usage"]["completion_tokens"])


def timed(binary: str, slots: int, prompts: list[str], tokens: int) -> tuple[float, int]:
    """Wall seconds and tokens decoded for ``prompts`` on a server with ``slots`` slots."""
    port = free_port()
    args = [binary, "-m", str(resolve_local_weights()), "--host", "127.0.0.1", "--port",
            str(port), "-c", str(4096 * slots), "-t", "2", "--parallel", str(slots)]  # fmt: skip
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "server.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http_ok(f"{base}/health", proc, Path(log.name), timeout_s=180)
            _ask(base, "Say hi.", 4)  # warm: weights paged in, graph built
            t0 = time.monotonic()
            with ThreadPoolExecutor(max_workers=slots) as pool:
                decoded = sum(pool.map(lambda p: _ask(base, p, tokens), prompts))
            return time.monotonic() - t0, decoded
        finally:
            stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the llama-server binary")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=160, help="tokens decoded per request")
    args = parser.parse_args()
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.requests)]
    one, n1 = timed(args.server, 1, prompts, args.tokens)
    two, n2 = timed(args.server, 2, prompts, args.tokens)
    print(f"one at a time: {one:.1f} s, {n1} tokens, {n1 / one:.1f} tokens/s")
    print(f"two at a time: {two:.1f} s, {n2} tokens, {n2 / two:.1f} tokens/s")
    print(f"two slots: {one / two:.2f}x the throughput of one (same prompts, same run)")


if __name__ == "__main__":
    main()
