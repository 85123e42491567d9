"""The offline embedding model: real semantics, per-text vectors, a registered Chroma function."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from chromadb.utils.embedding_functions import known_embedding_functions

from atom_agent.memory.embeddings import DIMENSIONS, Embedder, MiniLMInt8EmbeddingFunction
from atom_agent.memory.records import decode_vector, encode_vector


def test_unit_vectors_and_semantics() -> None:
    embedder = Embedder.shared()
    assert Embedder.shared() is embedder  # one ONNX session per process
    vectors = embedder.embed(
        [
            "The tests use pytest with fixtures",
            "Unit tests are run with the pytest framework",
            "The invoice total is rounded to two decimals",
        ]
    )
    assert vectors.shape == (3, DIMENSIONS) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.6 and unrelated < 0.2


def test_a_vector_depends_on_its_text_only() -> None:
    # Int8 activation scales span a whole input tensor: a batch would blend its members'
    # ranges. Each text runs alone, so batch mates, order and padding change nothing.
    embedder = Embedder.shared()
    texts = [
        "short",
        "a much longer sentence about the retry policy of the HTTP client " * 3,
        "mid size text",
    ]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-6)
    assert np.allclose(embedder.embed(texts[::-1]), together[::-1], atol=1e-6)
    assert np.allclose(embedder.embed_query("mid size text"), together[2], atol=1e-6)
    assert embedder.embed([]).shape == (0, DIMENSIONS)


def test_parallel_embedding_keeps_the_input_order(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = Embedder.shared()
    texts = [f"memory number {i} about {'the cache ' * (i % 5)}eviction" for i in range(11)]
    monkeypatch.setattr(embedder, "_workers", 1)
    serial = embedder.embed(texts)
    monkeypatch.setattr(embedder, "_workers", 3)  # uneven shares over 11 texts
    parallel = embedder.embed(texts)
    assert np.allclose(parallel, serial, atol=1e-6)


def test_a_repeated_text_is_embedded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = Embedder.shared()
    seen: list[str] = []
    real = embedder._embed_one

    def counting(text: str) -> np.ndarray:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(embedder, "_embed_one", counting)
    vectors = embedder.embed(["b text", "a text", "b text", "c text", "a text"])
    assert sorted(seen) == ["a text", "b text", "c text"]
    assert np.array_equal(vectors[0], vectors[2]) and np.array_equal(vectors[1], vectors[4])
    assert not np.allclose(vectors[0], vectors[1])


def test_long_inputs_are_truncated_not_rejected() -> None:
    vector = Embedder.shared().embed(["word " * 2000])
    assert vector.shape == (1, DIMENSIONS)


def test_vector_packing_round_trip() -> None:
    vector = Embedder.shared().embed_query("pack me")
    assert np.allclose(decode_vector(encode_vector(vector)), vector, atol=2e-3)


def test_registered_and_reopens_by_name(tmp_path: Path) -> None:
    assert known_embedding_functions["atom_minilm_l6_int8"] is MiniLMInt8EmbeddingFunction
    client = chromadb.PersistentClient(str(tmp_path), settings=Settings(anonymized_telemetry=False))
    collection = client.create_collection("notes", embedding_function=MiniLMInt8EmbeddingFunction())
    collection.add(
        ids=["a", "b"], documents=["the cache uses LRU eviction", "deploys happen on Fridays"]
    )
    reopened = chromadb.PersistentClient(
        str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    again = reopened.get_collection("notes")  # no embedding function passed: rebuilt from its name
    result = again.query(query_texts=["which eviction policy does the cache have?"], n_results=1)
    assert result["ids"] == [["a"]]


def test_the_optimised_model_is_cached_and_gives_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CACHE_DIR", str(tmp_path))
    texts = ["parse_config(path) reads YAML", "Ein Satz auf Deutsch.", "x"]
    built = Embedder()
    cached = list((tmp_path / "embedder").glob("minilm-int8-*.onnx"))
    assert len(cached) == 1
    again = Embedder()  # loads the optimised copy
    assert np.array_equal(built.embed(texts), again.embed(texts))
    cached[0].write_bytes(cached[0].read_bytes()[:1000])  # damaged: ignored and rebuilt
    rebuilt = Embedder()
    assert np.array_equal(built.embed(texts), rebuilt.embed(texts))
    assert [p.stat().st_size > 1000 for p in (tmp_path / "embedder").glob("*.onnx")] == [True]


def test_an_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ATOM_CACHE_DIR", str(blocked))
    vector = Embedder().embed(["still works"])
    assert vector.shape == (1, 384)
