"""Memory benchmark: recall latency and exactness at 10k / 100k records, remember throughput.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/memory_bench.py --sizes 10000 100000
    nice -n 19 .venv/bin/python benchmarks/memory_bench.py --sizes 100000 --no-snapshot-too

For each size N it fills a fresh embedded store with N generated, realistic memories (real
embeddings; 10 % superseded; types skewed so one type holds 2 %), then prints:

- recall p50/p95 with a type filter, the 0.5 confidence floor and superseded records excluded
  (query embeddings excluded: each query is embedded once before timing);
- the floor: exact numpy brute-force cosine over all N float32 vectors, then the same filters;
- their ratio (bar: <= 2), and the overlap of recall's top-10 with the exact filtered cosine
  top-10 (recall fuses BM25, confidence and recency in, so this is not 1.0 by construction) and
  with the same fused ranking read to full depth instead of recall's pool;
- remember throughput (one call at a time, from 8 threads at once, and remember_many; embedding
  included, the lexical index kept in step), embedding alone (one per call, and batched), the
  first recall after remember_many, and the check against the bar (>= 200 records/s);
- the first recall of a fresh process (open + recall, in a subprocess) with the snapshot the
  benchmark's manager wrote at close, and with --no-snapshot-too also without it.

Embeddings of the fill are computed once (and cached with --cache) and fed to the store, so the
fill does not embed twice; the throughput figures embed for real.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np  # noqa: E402

from atom_agent.memory import MemoryManager  # noqa: E402
from atom_agent.memory.embeddings import Embedder  # noqa: E402
from atom_agent.memory.records import MEMORY_TYPES  # noqa: E402
from atom_agent.session import SessionContext  # noqa: E402

BAR_RECORDS_S = 200
"""Issue 3: remember throughput, embedding included, must reach this many records/s."""
BAR_FIRST_RECALL_S = 1.0
"""Issue 15: open + first recall in a fresh process at 100k records."""
THREADS = 8
"""Concurrent remember callers in the threaded throughput figure."""
TYPE_WEIGHTS = {
    "fact": 40,
    "convention": 15,
    "lesson_learned": 14,
    "decision": 10,
    "discovery": 8,
    "assumption": 5,
    "hypothesis": 4,
    "risk": 2,
    "unknown": 2,
}
MODULES = [
    "cache",
    "parser",
    "scheduler",
    "auth",
    "billing",
    "search index",
    "HTTP client",
    "CLI",
    "config loader",
    "migration",
    "logging",
    "retry",
    "rate limiter",
    "session store",
    "exporter",
    "importer",
    "queue worker",
    "template engine",
    "payment gateway",
    "report builder",
    "graph",
    "tokenizer",
    "sandbox",
    "checkpoint",
    "planner",
    "executor",
    "reflector",
    "file watcher",
    "metrics",
    "notification",
    "image resizer",
    "PDF renderer",
    "email sender",
    "backup job",
]
SUBJECTS = [
    "the {m} module",
    "the {m} tests",
    "the {m} service",
    "our {m} code",
    "the new {m}",
    "the legacy {m}",
    "the {m} fixture",
    "the {m} API",
]
CLAIMS = [
    "times out when the database connection pool is exhausted",
    "must be called with UTC timestamps, never local time",
    "uses an OrderedDict to evict the least recently used entries",
    "is configured through environment variables prefixed with APP_",
    "fails on Windows because of path separators",
    "needs Redis running locally for its integration tests",
    "returns None instead of raising when the key is missing",
    "is flaky on CI because it depends on wall-clock sleeps",
    "was rewritten to stream results instead of loading everything in memory",
    "should validate input with pydantic models before touching the database",
    "logs secrets unless the redaction filter is installed",
    "retries three times with exponential backoff on HTTP 503",
    "depends on the order of dictionary keys in the JSON payload",
    "breaks when the input file has a byte order mark",
    "is tested with hypothesis property-based tests",
    "must keep backwards compatibility with version 2 of the schema",
    "reads its settings from pyproject.toml under the tool section",
    "holds a global lock, so it cannot run in parallel threads",
    "rounds currency amounts with banker's rounding",
    "uses snake_case names for every public function",
    "leaks file handles if the iterator is not fully consumed",
    "expects ISO 8601 dates in the request body",
    "is slow with more than ten thousand rows unless the index exists",
    "was deprecated in favour of the async version",
]
TAILS = [
    "",
    " (seen in step {s})",
    " according to the reviewer",
    " since release 1.{s}",
    " in the staging environment",
    " when run under pytest-xdist",
    " on Python 3.12",
]
QUERIES = [
    "why do the {m} tests fail on continuous integration?",
    "how is the {m} configured?",
    "what breaks in the {m} on Windows?",
    "does the {m} need any external service for testing?",
    "what time zone should the {m} use?",
    "how does the {m} handle missing keys?",
    "is the {m} thread safe?",
    "how does the {m} deal with large inputs?",
]


def generate(n: int, seed: int) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """N distinct sentences with a type, a confidence, and a superseded flag each."""
    rng = random.Random(seed)
    texts: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < n:
        m = rng.choice(MODULES)
        text = (
            rng.choice(SUBJECTS).format(m=m).capitalize()
            + " "
            + rng.choice(CLAIMS)
            + rng.choice(TAILS).format(s=rng.randint(1, 400))
            + "."
        )
        if text not in texts:
            texts.add(text)
            ordered.append(text)
    kinds = rng.choices(list(TYPE_WEIGHTS), weights=list(TYPE_WEIGHTS.values()), k=n)
    conf = np.array([round(rng.uniform(0.2, 1.0), 3) for _ in range(n)], dtype=np.float32)
    superseded = np.array([rng.random() < 0.10 for _ in range(n)])
    return ordered, kinds, conf, superseded


def embed_all(texts: list[str], cache: Path | None, n: int, seed: int) -> tuple[np.ndarray, float]:
    """Float32 embeddings of the fill (cached on disk when asked); returns (vectors, rate/s)."""
    if cache is not None:
        # Named after the embedding (int8 products since issue 3): a stale cache would mix two.
        path = cache / f"memory_bench_{n}_{seed}_int8mm.npy"
        if path.exists():
            return np.load(path), float("nan")
    started = time.perf_counter()
    vectors = Embedder.shared().embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    return vectors, rate


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def bench(
    n: int,
    seed: int,
    cache: Path | None,
    queries: int,
    store: Path | None,
    fresh_without_snapshot: bool = False,
) -> None:
    print(f"\n=== N = {n:,} ===", flush=True)
    texts, kinds, conf, superseded = generate(n, seed)
    vectors, rate = embed_all(texts, cache, n, seed)
    if rate == rate:
        print(f"fill embedding: {rate:,.0f} sentences/s (batched)", flush=True)
    lookup = {t: i for i, t in enumerate(texts)}
    session = SessionContext(session_id="bench", project_id=f"bench-{n}")
    with contextlib.ExitStack() as stack:
        where = (
            store / f"n{n}" if store else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        )
        filled = where / "filled"
        manager = stack.enter_context(MemoryManager.open(where))
        real_embed = manager.embedder.embed
        # Feed the precomputed fill vectors (the throughput figures below embed for real).
        manager.embedder.embed = lambda batch: vectors[[lookup[t] for t in batch]]  # type: ignore[method-assign]
        started = time.perf_counter()
        base = time.time() - n  # one second apart, oldest first
        records = [
            {
                "content": t,
                "type": k,
                "confidence": float(c),
                "created_at": base + i,
                **({"superseded_at": base + i + 0.5} if s else {}),
            }
            for i, (t, k, c, s) in enumerate(zip(texts, kinds, conf, superseded, strict=True))
        ]
        if not filled.exists():
            for start in range(0, n, 5000):
                manager.import_(session, records[start : start + 5000])
            fill_s = time.perf_counter() - started
            print(f"fill (store writes only): {n / fill_s:,.0f} records/s, {fill_s:.1f} s")
            filled.touch()
        manager.embedder.embed = real_embed  # type: ignore[method-assign]
        started = time.perf_counter()
        manager.recall(session, "warm up the mirror")
        print(f"first recall (loads the mirror): {time.perf_counter() - started:.2f} s", flush=True)

        rng = random.Random(seed + 1)
        qs = [rng.choice(QUERIES).format(m=rng.choice(MODULES)) for _ in range(queries)]
        qvecs = {q: Embedder.shared().embed_query(q) for q in qs}  # embedded before timing
        type_arr = np.array([MEMORY_TYPES.index(k) for k in kinds])
        for kind in ("fact", "risk"):
            share = float(np.mean(type_arr == MEMORY_TYPES.index(kind)))
            ours: list[float] = []
            floor: list[float] = []
            overlaps: list[float] = []
            blended: list[float] = []
            sync = manager._sync(session.project_id)
            for q in qs:
                t0 = time.perf_counter()
                got = manager.recall(session, q, type=kind, min_confidence=0.5, limit=10)
                ours.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                scores = vectors @ qvecs[q]
                mask = (type_arr == MEMORY_TYPES.index(kind)) & (conf >= 0.5) & ~superseded
                scores = np.where(mask, scores, -np.inf)
                top = np.argpartition(-scores, 10)[:10]
                top = top[np.argsort(-scores[top])]
                floor.append(time.perf_counter() - t0)
                exact = {texts[i] for i in top}
                overlaps.append(len(exact & {r.content for r in got}) / 10)
                # The same blended ranking computed exhaustively over every passing record.
                index = sync.index()
                keep = index.mask(
                    type_code=MEMORY_TYPES.index(kind),
                    min_confidence=0.5,
                    include_superseded=False,
                    now=time.time(),
                )
                full = index.rank(keep, qvecs[q], q, 10, time.time(), pool=len(index))
                blended.append(
                    len({index.docs[h.row] for h in full} & {r.content for r in got})
                    / max(1, len(full))
                )
            p50, p95 = percentile(ours, 50) * 1e3, percentile(ours, 95) * 1e3
            f50 = percentile(floor, 50) * 1e3
            print(
                f"recall type={kind:<5} ({share:5.1%} of records):"
                f" p50 {p50:6.2f} ms  p95 {p95:6.2f} ms"
                f" | brute-force floor p50 {f50:6.2f} ms | ratio {p50 / f50:4.2f}"
                f" (bar <= 2: {'PASS' if p50 <= 2 * f50 else 'FAIL'})"
                f" | top-10 overlap vs exact cosine: mean {statistics.mean(overlaps):.3f}"
                f" min {min(overlaps):.1f}; vs exhaustive blended ranking: mean"
                f" {statistics.mean(blended):.3f}",
                flush=True,
            )

        throughput(manager, session, rng)
        manager.close()  # writes the mirror's snapshot, as any process does when it ends
        fresh_process(where, session, snapshot=True)
        if fresh_without_snapshot:
            fresh_process(where, session, snapshot=False)


FRESH = """
import json, os, sys, time
t0 = time.perf_counter()
from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext
t1 = time.perf_counter()
memory = MemoryManager.open(sys.argv[1])
found = memory.recall(SessionContext(session_id="fresh", project_id=sys.argv[2]), sys.argv[3])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_recall_s": t2 - t1, "count": len(found)}))
os._exit(0)  # the figure is taken; skip writing access counts and the snapshot again
"""


def fresh_process(where: Path, session: SessionContext, *, snapshot: bool) -> None:
    """The first recall of a new process (a CLI call, a batch worker): open + one recall."""
    if not snapshot:
        for path in (where / "memory").glob(".atom-memory-*.mirror.npz"):
            path.unlink()
    query = "why do the cache tests fail on continuous integration?"
    out = subprocess.run(
        [sys.executable, "-c", FRESH, str(where), session.project_id, query],
        check=True,
        capture_output=True,
        text=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    label = "with the snapshot" if snapshot else "without a snapshot (loads all from Chroma)"
    verdict = ""
    if snapshot:
        ok = got["open_recall_s"] <= BAR_FIRST_RECALL_S
        verdict = f" | bar (issue 15) <= {BAR_FIRST_RECALL_S:.0f} s -> {'PASS' if ok else 'FAIL'}"
    print(
        f"fresh process, {label}: open + first recall {got['open_recall_s']:.2f} s"
        f" (imports before it {got['import_s']:.2f} s; {got['count']} found){verdict}",
        flush=True,
    )


def throughput(manager: MemoryManager, session: SessionContext, rng: random.Random) -> None:
    """Remember throughput, embedding included, against the bar of issue 3 (≥ 200 records/s)."""
    embedder = Embedder.shared()
    single = [
        f"Bench single remember number {i} about the {MODULES[i % len(MODULES)]}"
        for i in range(300)
    ]
    started = time.perf_counter()
    for text in single:
        manager.remember(session, text, type="fact")
    per_s = len(single) / (time.perf_counter() - started)
    started = time.perf_counter()
    for text in single:
        embedder.embed([text + " again"])
    embed_one_s = len(single) / (time.perf_counter() - started)
    batch = [{"content": f"Bench batched memory {i}: {rng.choice(CLAIMS)}"} for i in range(2000)]
    started = time.perf_counter()
    embedder.embed([f"{item['content']} again" for item in batch])
    embed_many_s = len(batch) / (time.perf_counter() - started)
    started = time.perf_counter()
    manager.remember_many(session, batch)
    batch_s = len(batch) / (time.perf_counter() - started)
    started = time.perf_counter()
    manager.recall(session, "how is the cache configured?")
    after_s = time.perf_counter() - started  # the lexical index takes the new rows in lazily
    threaded = [f"Bench threaded remember {i}: {rng.choice(CLAIMS)}" for i in range(800)]
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:  # concurrent callers: batch workers, async tools
        list(pool.map(lambda text: manager.remember(session, text, type="fact"), threaded))
    threaded_s = len(threaded) / (time.perf_counter() - started)
    print(
        f"remember (embedding included): {per_s:,.0f} records/s one call at a time;"
        f" {threaded_s:,.0f} records/s from {THREADS} threads (group commit);"
        f" {batch_s:,.0f} records/s via remember_many"
        f" | embedding alone: {embed_one_s:,.0f}/s one per call, {embed_many_s:,.0f}/s batched",
        flush=True,
    )
    print(
        f"  the first recall after remember_many ({len(batch):,} new records to tokenise into"
        f" the lexical index): {after_s * 1e3:.0f} ms",
        flush=True,
    )
    verdict = "PASS" if batch_s >= BAR_RECORDS_S else "FAIL"
    print(
        f"bar (issue 3) remember throughput, embedding included: {batch_s:,.0f} records/s via"
        f" remember_many vs >= {BAR_RECORDS_S} -> {verdict}",
        flush=True,
    )
    print(
        f"  not the bar, latency-bound: one call at a time {per_s:,.0f}/s and {THREADS}"
        f" concurrent callers {threaded_s:,.0f}/s; each call waits for a Chroma upsert and"
        f" commit (~{1000 / per_s:.0f} ms per call here), which no batching inside one call"
        f" can shorten",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=None, help="cache fill embeddings here")
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="keep the filled stores here and reuse them to iterate on recall latency (the "
        "remember figures add 2,300 records the exact reference lacks: overlaps then drop)",
    )
    parser.add_argument(
        "--no-snapshot-too",
        action="store_true",
        help="also time a fresh process's first recall with the snapshot deleted (slow)",
    )
    args = parser.parse_args()
    print(f"memory benchmark; cpus={os.cpu_count()} sizes={args.sizes} queries={args.queries}")
    for n in args.sizes:
        bench(n, args.seed, args.cache, args.queries, args.store, args.no_snapshot_too)


if __name__ == "__main__":
    main()
