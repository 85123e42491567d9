"""Lexical ranking for recall: BM25 (bm25s) over one project's records, in step with the mirror."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import bm25s
import numpy as np
import numpy.typing as npt

from atom_agent.memory.lines import Lines, TextRows

# A token is a run of word characters, joined across inner . - (`os.path`, `utf-8`, `v1.2.3`);
# identifiers are also split into their parts (`parse_config` → parse, config; `ParseConfig` too)
# so a query can name either the whole identifier or its words.
_TOKEN = re.compile(r"\w+(?:[.\-]\w+)*")
_PART = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
STOP_WORDS = frozenset(
    "a an and are as at be been but by can could did do does doing for from had has have how i if "
    "in into is it its itself me my no nor not of on or our ours should so than that the their "
    "theirs them then there these they this those to too us was we were what when where which "
    "while who whom why will with would you your".split()
)
MAX_QUERY_TOKENS = 256
"""A query's distinct tokens beyond this many are ignored (a 100 kB query stays cheap)."""


def _stem(word: str) -> str:
    # A minimal plural stemmer (Lucene's "minimal English"): tests → test, queries → query.
    if len(word) > 4 and word.endswith("ies") and word[-4] not in "ae":
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and word[-2] not in "su" and word.isalpha():
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of `text`: lower-case words and identifiers, their parts, CJK bigrams."""
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        raw = match.group()
        whole = raw.lower()
        if _CJK.search(raw):
            chars = [c for c in whole if not c.isspace()]
            out.extend(
                chars if len(chars) < 2 else [a + b for a, b in zip(chars, chars[1:], strict=False)]
            )
            continue
        parts = [p for piece in _PART.findall(raw) for p in _CAMEL.findall(piece) or [piece]]
        if len(parts) <= 1:
            if whole not in STOP_WORDS and (len(whole) > 1 or whole.isdigit()):
                out.append(_stem(whole))
            continue
        out.append(whole)
        out.extend(_stem(p.lower()) for p in parts if p.lower() not in STOP_WORDS)
    return out


def query_tokens(text: str) -> list[str]:
    """The distinct tokens of a query, in order, at most :data:`MAX_QUERY_TOKENS`."""
    seen: dict[str, None] = {}
    for token in tokenize(text):
        seen.setdefault(token)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


class LexicalIndex:
    """BM25 scores over the rows of one :class:`~atom_agent.memory.index.ProjectIndex`.

    bm25s keeps a static index (its scores are precomputed into a sparse matrix: a query costs
    ≈ 0.5 ms at 100k records, where SQLite FTS5's bm25 costs ≈ 50 ms; see
    ``benchmarks/lexical_choice.py``), and it cannot add a document without rebuilding. So rows
    written since the last build form a *delta*, scored with the same Lucene BM25 formula and the
    base's document frequencies plus the delta's own; the base is rebuilt once the delta outgrows
    :data:`REBUILD_MIN_ROWS` and :data:`REBUILD_SHARE` of it (amortised: well under 1 ms a record).
    Rows are the mirror's rows (never reused); filters stay the mirror's masks.
    """

    K1 = 1.5
    B = 0.75

    def __init__(self) -> None:
        self.tokens: Lines[list[str] | str | None] = Lines()
        """Per row; None until needed (tokenising is lazy, so loading the mirror stays cheap),
        or a snapshot's joined string until split."""
        self.base: bm25s.BM25 | None = None
        self.base_rows = 0
        self.base_avgdl = 1.0
        self.base_df: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.stale: set[int] = set()
        """Base rows whose document changed or was removed after the build."""
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        """Per token of the delta: its rows and BM25 term weights ``tf / (norm + tf)`` without
        the idf, as arrays (built on first use, dropped when the token's posting grows)."""
        self._stale_rows: npt.NDArray[np.int64] | None = None
        self._lengths: dict[int, int] = {}
        self._delta: set[int] = set()
        self._posted: set[int] = set()
        self.rebuilds = 0
        """How many times the base was built (a snapshot is worth saving after one)."""

    def grow(self, rows: int) -> None:
        """Make room for `rows` rows (new rows start in the delta)."""
        while len(self.tokens) < rows:
            self._delta.add(len(self.tokens))
            self.tokens.append(None)

    def changed(self, row: int) -> None:
        """Row `row`'s document is new or different: score it in the delta."""
        self.grow(row + 1)
        self.tokens[row] = None
        if row < self.base_rows:
            self.stale.add(row)
            self._stale_rows = None
        if row in self._posted:  # rare (an import replacing a document): re-post the delta
            self._postings.clear()
            self._arrays.clear()
            self._lengths.clear()
            self._posted.clear()
        self._delta.add(row)

    def removed(self, row: int) -> None:
        """Row `row` is gone; the mirror's mask already hides it, this only keeps stats honest."""
        self.changed(row)
        self.tokens[row] = []

    def scores(self, docs: TextRows, tokens: list[str], rows: int) -> npt.NDArray[np.float32]:
        """BM25 of every row against the query `tokens` (0 where no token matches)."""
        self.grow(rows)
        if len(self._delta) > max(REBUILD_MIN_ROWS, REBUILD_SHARE * self.base_rows):
            self.rebuild(docs)
        out = np.zeros(rows, dtype=np.float32)
        if not tokens:
            return out
        n_docs = self.base_rows + len(self._delta) - len(self.stale & self._delta)
        if self.base is not None:
            ids = self.base.get_tokens_ids(tokens)
            if ids:
                base = self.base.get_scores_from_ids(ids)
                out[: base.size] = base
                if self.stale:
                    if self._stale_rows is None:
                        self._stale_rows = np.fromiter(self.stale, np.int64, len(self.stale))
                    out[self._stale_rows] = 0.0
        if self._delta:
            self._post(docs)
            for token in tokens:
                weighted = self._weights(token)
                if weighted is None:
                    continue
                found, weights = weighted
                df = len(found) + self._base_df(token)
                idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                np.add.at(out, found, idf * weights)
        return out

    def _weights(self, token: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        """The delta rows holding `token` and their term weights (None when none does)."""
        cached = self._arrays.get(token)
        if cached is not None:
            return cached
        posting = self._postings.get(token)
        if not posting:
            return None
        found = np.asarray(posting[0], dtype=np.int64)
        tfs = np.asarray(posting[1], dtype=np.float32)
        lengths = np.fromiter((self._lengths[r] for r in posting[0]), np.float32, len(found))
        norm = self.K1 * ((1 - self.B) + self.B * lengths / self.base_avgdl)
        self._arrays[token] = found, tfs / (norm + tfs)
        return self._arrays[token]

    def _base_df(self, token: str) -> int:
        if self.base is None:
            return 0
        tid = self.base.vocab_dict.get(token)
        return 0 if tid is None or tid >= self.base_df.size else int(self.base_df[tid])

    def _tokens(self, docs: TextRows, row: int) -> list[str]:
        found = self.tokens[row]
        if found is None or found == _UNTOKENISED:
            found = self.tokens[row] = tokenize(docs[row])
        elif isinstance(found, str):  # as a snapshot holds it
            found = self.tokens[row] = found.split(_SEP) if found else []
        return found

    def _post(self, docs: TextRows) -> None:
        for row in self._delta - self._posted:
            counts = Counter(self._tokens(docs, row))
            self._lengths[row] = max(1, sum(counts.values()))
            for token, tf in counts.items():
                posting = self._postings.setdefault(token, ([], []))
                posting[0].append(row)
                posting[1].append(tf)
                self._arrays.pop(token, None)
            self._posted.add(row)
        if not self.base_rows:  # no base yet: the delta's own average length
            avgdl = float(np.mean(list(self._lengths.values()))) if self._lengths else 1.0
            if avgdl != self.base_avgdl:  # every weight depends on it
                self._arrays.clear()
            self.base_avgdl = avgdl

    def rebuild(self, docs: TextRows) -> None:
        """Build the bm25s base over every row; the delta empties."""
        rows = len(self.tokens)
        corpus = [self._tokens(docs, r) for r in range(rows)]
        lengths = [len(t) for t in corpus]
        self._install(_build(corpus), rows, max(1.0, float(np.mean(lengths))) if rows else 1.0)
        self.rebuilds += 1

    def _install(self, base: bm25s.BM25 | None, rows: int, avgdl: float) -> None:
        self.base = base
        self.base_rows = rows
        self.base_avgdl = avgdl
        self.base_df = np.zeros(0, dtype=np.int64)
        if base is not None:
            indptr = np.asarray(base.scores["indptr"], dtype=np.int64)
            self.base_df = (indptr[1:] - indptr[:-1]).astype(np.int64)
        self.stale = set()
        self._stale_rows = None
        self._delta = set(range(rows, len(self.tokens)))
        self._postings.clear()
        self._arrays.clear()
        self._lengths.clear()
        self._posted.clear()

    # --- persistence (see atom_agent.memory.snapshot) -------------------------------------------

    def state(self, docs: TextRows) -> tuple[dict[str, npt.NDArray[Any]], dict[str, Any]]:
        """Arrays and JSON-ready fields that :meth:`restore` turns back into this index."""
        arrays: dict[str, npt.NDArray[Any]] = {}
        if self.base is not None:
            for key in ("data", "indices", "indptr"):
                arrays[f"bm25_{key}"] = np.asarray(self.base.scores[key])
        # A row's tokens joined by _SEP; a row never tokenised stays so (_UNTOKENISED): tokenising
        # is work a later rebuild does if it needs it.
        arrays["tokens"], arrays["tokens_offsets"] = self.tokens.pack(
            lambda t: _UNTOKENISED if t is None else t if isinstance(t, str) else _SEP.join(t)
        )
        arrays.update(self._delta_state(docs))
        fields = {
            "rows": self.base_rows,
            "count": len(self.tokens),
            "avgdl": self.base_avgdl,
            "vocab": self.base.vocab_dict if self.base is not None else None,
            "stale": sorted(self.stale),
        }
        return arrays, fields

    @classmethod
    def restore(
        cls, arrays: Mapping[str, npt.NDArray[Any]], fields: Mapping[str, Any]
    ) -> LexicalIndex:
        """The index :meth:`state` described."""
        index = cls()
        count = int(fields["count"])
        # Decoded and split into tokens only when a row is scored or rebuilt (see _tokens).
        index.tokens = Lines(arrays["tokens"], arrays["tokens_offsets"])
        if len(index.tokens) != count:
            raise ValueError(f"snapshot holds {len(index.tokens)} token rows, expected {count}")
        base = None
        if fields.get("vocab") is not None:
            base = bm25s.BM25(k1=cls.K1, b=cls.B)
            base.scores = {
                "data": arrays["bm25_data"],
                "indices": arrays["bm25_indices"],
                "indptr": arrays["bm25_indptr"],
                "num_docs": int(fields["rows"]),
            }
            base.vocab_dict = dict(fields["vocab"])
            base.unique_token_ids_set = set(base.vocab_dict.values())
            base.nonoccurrence_array = None
        index._install(base, int(fields["rows"]), float(fields["avgdl"]))
        index.stale = set(fields["stale"])
        index._delta |= index.stale
        if "post_vocab" in arrays:
            index._restore_delta(arrays)
        return index

    def _delta_state(self, docs: TextRows) -> dict[str, npt.NDArray[Any]]:
        """The delta's postings as arrays: a fresh process's first query need not tokenise it."""
        self._post(docs)
        vocab = list(self._postings)
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        rows: list[int] = []
        tfs: list[int] = []
        for i, token in enumerate(vocab):
            posting = self._postings[token]
            rows += posting[0]
            tfs += posting[1]
            indptr[i + 1] = len(rows)
        posted = sorted(self._posted)
        return {
            "post_vocab": np.frombuffer("\n".join(vocab).encode("utf-8"), dtype=np.uint8),
            "post_indptr": indptr,
            "post_rows": np.asarray(rows, dtype=np.int64),
            "post_tfs": np.asarray(tfs, dtype=np.int32),
            "posted": np.asarray(posted, dtype=np.int64),
            "posted_lengths": np.asarray([self._lengths[r] for r in posted], dtype=np.int64),
        }

    def _restore_delta(self, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
        posted = arrays["posted"].tolist()
        if not set(posted) <= self._delta:
            raise ValueError("snapshot postings name rows outside the delta")
        text = arrays["post_vocab"].tobytes().decode("utf-8")
        vocab = text.split("\n") if text else []
        bounds = arrays["post_indptr"].tolist()
        if len(bounds) != len(vocab) + 1:
            raise ValueError("snapshot postings disagree with their vocabulary")
        rows, tfs = arrays["post_rows"].tolist(), arrays["post_tfs"].tolist()
        self._postings = {
            token: (rows[bounds[i] : bounds[i + 1]], tfs[bounds[i] : bounds[i + 1]])
            for i, token in enumerate(vocab)
        }
        self._lengths = dict(zip(posted, arrays["posted_lengths"].tolist(), strict=True))
        self._posted = set(posted)


_SEP = "\x1f"
_UNTOKENISED = "\x00"
REBUILD_MIN_ROWS = 2000
"""The delta is folded into the bm25s base when it holds more rows than this …"""
REBUILD_SHARE = 0.1
"""… and more than this share of the base."""


def _build(corpus: list[list[str]]) -> bm25s.BM25 | None:
    if not any(corpus):
        return None
    model = bm25s.BM25(k1=LexicalIndex.K1, b=LexicalIndex.B)
    model.index(corpus, show_progress=False)
    return model
