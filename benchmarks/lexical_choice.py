"""bm25s vs SQLite FTS5 (bm25) as atom_agent's lexical ranker, measured on one corpus.

    nice -n 19 .venv/bin/python benchmarks/lexical_choice.py --n 100000

Both rank the same token streams (atom_agent's tokenizer, joined by spaces for FTS5). Printed:
build time, the cost of adding one record to a built index, and query p50/p95 for full
filter-ready scoring (bm25s: a score for every record; FTS5: every matching row with its bm25)
and FTS5's own top-100 (`ORDER BY rank LIMIT 100`).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bm25s
import numpy as np

from atom_agent.memory.lexical import tokenize

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling module
from memory_bench import MODULES, QUERIES, generate  # noqa: E402


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts, *_ = generate(args.n, 7)
    rng = random.Random(8)
    queries = [rng.choice(QUERIES).format(m=rng.choice(MODULES)) for _ in range(args.queries)]
    started = time.perf_counter()
    tokens = [tokenize(t) for t in texts]
    tok_s = time.perf_counter() - started
    print(f"n={args.n:,} tokenize: {tok_s:.2f} s")

    started = time.perf_counter()
    model = bm25s.BM25()
    model.index(tokens, show_progress=False)
    build = time.perf_counter() - started
    times = []
    for q in queries:
        t0 = time.perf_counter()
        ids = model.get_tokens_ids(tokenize(q))
        scores = model.get_scores_from_ids(ids) if ids else np.zeros(args.n, np.float32)
        np.argpartition(-scores, 100)[:100]
        times.append(time.perf_counter() - t0)
    print(
        f"bm25s: build {build:.2f} s; add one record = rebuild ({build:.2f} s, no incremental"
        f" add); query (every record scored + top-100) p50 {pct(times, 50):.2f} ms"
        f" p95 {pct(times, 95):.2f} ms"
    )

    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(str(Path(tmp) / "fts.sqlite"))
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE VIRTUAL TABLE f USING fts5(body, tokenize='unicode61 tokenchars ''_''')")
        started = time.perf_counter()
        with db:
            db.executemany(
                "INSERT INTO f(rowid, body) VALUES (?, ?)",
                ((i, " ".join(t)) for i, t in enumerate(tokens)),
            )
        fts_build = time.perf_counter() - started
        adds = []
        for i in range(50):
            t0 = time.perf_counter()
            with db:
                db.execute(
                    "INSERT INTO f(rowid, body) VALUES (?, ?)",
                    (args.n + i, " ".join(tokenize(f"new record {i} about the cache"))),
                )
            adds.append(time.perf_counter() - t0)
        full, top, matched = [], [], []
        for q in queries:
            expr = " OR ".join(f'"{w}"' for w in tokenize(q))
            t0 = time.perf_counter()
            rows = db.execute("SELECT rowid, bm25(f) FROM f WHERE f MATCH ?", (expr,)).fetchall()
            full.append(time.perf_counter() - t0)
            matched.append(len(rows))
            t0 = time.perf_counter()
            db.execute(
                "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 100", (expr,)
            ).fetchall()
            top.append(time.perf_counter() - t0)
        print(
            f"fts5: build {fts_build:.2f} s; add one record (own commit) p50"
            f" {pct(adds, 50):.2f} ms; query all matches with bm25 p50 {pct(full, 50):.2f} ms"
            f" p95 {pct(full, 95):.2f} ms ({statistics.mean(matched):,.0f} matching rows on"
            f" average); top-100 by rank p50 {pct(top, 50):.2f} ms p95 {pct(top, 95):.2f} ms"
        )


if __name__ == "__main__":
    main()
