"""The offline embedding model: real semantics, dynamic padding, a registered Chroma function."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
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


def test_padding_to_the_batch_does_not_change_vectors() -> None:
    embedder = Embedder.shared()
    texts = [
        "short",
        "a much longer sentence about the retry policy of the HTTP client " * 3,
        "mid size text",
    ]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert embedder.embed([]).shape == (0, DIMENSIONS)


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
