"""A project's mirror and lexical index on local disk, so a fresh process need not rebuild them.

Loading 100k records from Chroma takes seconds (every metadata dict, every vector decoded) and
building the BM25 index more; a snapshot loads in well under a second. It is a cache, never the
truth: whoever loads one refreshes it from Chroma like any mirror (rows changed since its
``synced_at``, and a full reload if records were deleted since), and a snapshot of another
collection, another format or a damaged file is ignored.
"""

from __future__ import annotations

import json
import logging
import math
import os
import struct
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from atom_agent.memory.embeddings import DIMENSIONS
from atom_agent.memory.index import Metas, ProjectIndex
from atom_agent.memory.lexical import LexicalIndex
from atom_agent.memory.lines import Lines

logger = logging.getLogger(__name__)

FORMAT = 3
_ARRAYS = ("type_code", "confidence", "created", "expires", "superseded", "alive")


@dataclass
class Capture:
    """What :func:`write` needs of an index, taken under the index's lock (quick: copies)."""

    arrays: dict[str, Any]
    header: dict[str, Any]
    rows: int


def capture(index: ProjectIndex, collection_id: str, token: str) -> Capture:
    """Copy what a snapshot holds; call with the index's lock held, then :func:`write` without.

    `token` is the change token the index is known to reflect: a process that finds the store's
    token unchanged needs no refresh at all.
    """
    n = len(index.ids)
    lexical_arrays, lexical_fields = index.lexical.state(index.docs)
    header = {
        "format": FORMAT,
        "collection": collection_id,
        "token": token,
        "synced_at": index.synced_at,
        "ids": list(index.ids),
        "lexical": lexical_fields,
    }
    arrays: dict[str, Any] = {name: getattr(index, name)[:n].copy() for name in _ARRAYS}
    # float32 as the mirror holds them: converting float16 costs more than reading twice as much.
    arrays["vecs"] = index.vecs[:n].copy()
    # Documents and metadata texts as buffers and offsets: a row is decoded (and its metadata
    # parsed) when first read, not at load (see atom_agent.memory.lines).
    arrays["docs"], arrays["docs_offsets"] = index.docs.pack()
    arrays["metas"], arrays["metas_offsets"] = index.metas.pack()
    arrays.update(lexical_arrays)  # built once, never changed in place
    index.unsaved = 0
    return Capture(arrays, header, n)


def write(taken: Capture, path: Path) -> None:
    """Write a captured index to `path` atomically (temp file + rename)."""
    arrays = dict(taken.arrays)
    arrays["header"] = np.frombuffer(json.dumps(taken.header).encode("utf-8"), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.debug("saved a snapshot of %d memories to %s", taken.rows, path)


def load(path: Path, collection_id: str) -> tuple[ProjectIndex, str] | None:
    """The index saved at `path` for `collection_id` and the change token it reflects.

    None when there is none, or it is of another collection or format, or damaged.
    """
    try:
        arrays = _mapped(path)
        header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
        if header.get("format") != FORMAT or header.get("collection") != collection_id:
            return None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):  # a damaged cache: rebuild it
        logger.warning("ignoring the unreadable memory snapshot %s", path, exc_info=True)
        return None
    try:
        return _restore(header, arrays)
    except (ValueError, KeyError, TypeError):
        logger.warning("ignoring the inconsistent memory snapshot %s", path, exc_info=True)
        return None


def _mapped(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Every array of the ``.npz`` at `path`, memory-mapped copy-on-write.

    ``np.load`` reads a member through :mod:`zipfile` (a copy and a CRC over every byte); a
    stored (uncompressed) member, as :func:`write` makes them, is a plain ``.npy`` at a known
    offset, so it can be mapped: pages are read when first used, and writes stay private to the
    process.

    Raises:
        ValueError: a member is not one :func:`write` makes, or the file is shorter than a
            member claims (a damaged snapshot).
    """
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as handle:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{path}: {info.filename} is compressed")
            arrays[info.filename.removesuffix(".npy")] = _map_member(path, handle, info)
    return arrays


def _map_member(path: Path, handle: Any, info: zipfile.ZipInfo) -> np.ndarray[Any, Any]:
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"{path}: no local header for {info.filename}")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    handle.seek(info.header_offset + 30 + name_len + extra_len)
    if np.lib.format.read_magic(handle) != (1, 0):  # (2, 0) only for headers over 64 KiB
        raise ValueError(f"{path}: {info.filename} is not a plain array")
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    offset = handle.tell()
    if fortran or dtype.hasobject:
        raise ValueError(f"{path}: {info.filename} is not a plain array")
    if math.prod(shape) == 0:
        return np.empty(shape, dtype=dtype)
    if (
        offset + math.prod(shape) * dtype.itemsize
        > info.header_offset + 30 + name_len + extra_len + info.file_size
    ):
        raise ValueError(f"{path}: {info.filename} is shorter than its header says")
    return np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape)


def _restore(header: dict[str, Any], arrays: dict[str, Any]) -> tuple[ProjectIndex, str]:
    index = ProjectIndex()
    ids: list[str] = header["ids"]
    n = len(ids)
    docs: Lines[str] = Lines(arrays["docs"], arrays["docs_offsets"])
    metas: Lines[dict[str, Any] | str] = Lines(arrays["metas"], arrays["metas_offsets"])
    if arrays["vecs"].shape != (n, DIMENSIONS) or len(metas) != n or len(docs) != n:
        raise ValueError(f"snapshot rows disagree (ids {n}, metas {len(metas)}, docs {len(docs)})")
    index.ids = ids
    index.docs = docs
    index.metas = Metas(metas)
    index.pos = {memory_id: row for row, memory_id in enumerate(ids)}
    index.vecs = np.asarray(arrays["vecs"], dtype=np.float32)
    for name in _ARRAYS:
        setattr(index, name, arrays[name])
    index.synced_at = float(header["synced_at"])
    index.lexical = LexicalIndex.restore(arrays, header["lexical"])
    index.unsaved = 0
    return index, str(header["token"])
