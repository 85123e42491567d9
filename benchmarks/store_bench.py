"""Store benchmark: ChromaStore vs LangGraph's InMemoryStore, measured in the same run.

    nice -n 19 .venv/bin/python benchmarks/store_bench.py --sizes 1000 10000

For each size N both stores are filled with the same N items (N/10 namespaces
``("users", "u<i>", "memories")``, values ``{"text", "n", "kind"}``, ``text`` indexed), then
each operation is timed one call at a time and the median printed in milliseconds, with the
ratio ChromaStore / InMemoryStore. Both stores get the same embedding function (a
deterministic hash to a unit vector), so the figures are the stores' own cost, not the
embedding model's. ChromaStore is embedded (``PersistentClient`` in a temporary directory).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
from langgraph.store.base import BaseStore, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from atom_agent.memory.langgraph_store import ChromaStore  # noqa: E402

DIMS = 384
KINDS = ["fact", "lesson", "decision", "risk"]


def embed(texts: list[str]) -> np.ndarray:
    out = np.empty((len(texts), DIMS), dtype=np.float32)
    for i, text in enumerate(texts):
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        out[i] = v / np.linalg.norm(v)
    return out


def items(n: int) -> list[PutOp]:
    users = max(1, n // 10)
    return [
        PutOp(
            ("users", f"u{i % users}", "memories"),
            f"m{i}",
            {"text": f"memory {i} about topic {i % 97}", "n": i, "kind": KINDS[i % 4]},
            index=["text"],
        )
        for i in range(n)
    ]


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench(store: BaseStore, n: int, repeat: int) -> dict[str, float]:
    ops = items(n)
    start = time.perf_counter()
    for i in range(0, n, 500):
        store.batch(ops[i : i + 500])
    fill = time.perf_counter() - start
    rng = random.Random(7)
    users = max(1, n // 10)
    out = {"fill items/s": n / fill}
    counter = iter(range(10**9))
    out["put"] = timed(
        lambda: store.put(
            ("users", "u0", "memories"), f"new{next(counter)}", {"text": "x", "n": -1}
        ),
        repeat,
    )
    out["get"] = timed(
        lambda: store.get(("users", f"u{rng.randrange(users)}", "memories"), "m0"), repeat
    )
    out["search prefix"] = timed(lambda: store.search(("users",), limit=10), repeat)
    out["search user"] = timed(
        lambda: store.search(("users", f"u{rng.randrange(users)}"), limit=10), repeat
    )
    out["search filter"] = timed(
        lambda: store.search(("users",), filter={"kind": "risk", "n": {"$gte": n // 2}}), repeat
    )
    out["search query"] = timed(
        lambda: store.search(("users",), query="memory about topic 42", limit=10), repeat
    )
    out["list_namespaces"] = timed(lambda: store.list_namespaces(), repeat)
    out["list_namespaces depth2"] = timed(
        lambda: store.list_namespaces(prefix=("users",), max_depth=2, limit=1000), repeat
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            chroma = ChromaStore.open(Path(tmp), project_id="bench", embed=embed)
            ours = bench(chroma, n, args.repeat)
        memory = InMemoryStore(
            index={"dims": DIMS, "embed": lambda t: embed(list(t)).tolist(), "fields": ["text"]}
        )
        theirs = bench(memory, n, args.repeat)
        print(f"\n{n} items ({max(1, n // 10)} namespaces), median of {args.repeat} calls")
        print(f"{'operation':<24}{'ChromaStore':>14}{'InMemoryStore':>16}{'ratio':>9}")
        for name in ours:
            unit = "" if name.startswith("fill") else " ms"
            a, b = ours[name], theirs[name]
            print(f"{name:<24}{a:>11.3f}{unit:<3}{b:>13.3f}{unit:<3}{a / b:>8.1f}x")


if __name__ == "__main__":
    main()
