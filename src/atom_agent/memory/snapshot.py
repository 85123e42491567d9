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

logger = logging.getLogger(__name__)

FORMAT = 2
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
        "docs": list(index.docs),
        "lexical": lexical_fields,
    }
    arrays: dict[str, Any] = {name: getattr(index, name)[:n].copy() for name in _ARRAYS}
    # float32 as the mirror holds them: converting float16 costs more than reading twice as much.
    arrays["vecs"] = index.vecs[:n].copy()
    # One JSON object a line (json.dumps escapes newlines): splitting beats parsing 100k dicts.
    metas = "\n".join(index.metas.text(r) for r in range(n))
    arrays["metas"] = np.frombuffer(metas.encode("utf-8"), dtype=np.uint8)
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
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["header"].tobytes().decode("utf-8"))
            if header.get("format") != FORMAT or header.get("collection") != collection_id:
                return None
            # The vectors are most of the file (150 MB at 100k records): mapped, not read.
            mapped = _mapped(path, "vecs")
            arrays = {
                key: data[key]
                for key in data.files
                if key != "header" and not (key == "vecs" and mapped is not None)
            }
            if mapped is not None:
                arrays["vecs"] = mapped
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


def _mapped(path: Path, name: str) -> np.ndarray[Any, Any] | None:
    """Array `name` of the uncompressed ``.npz`` at `path`, memory-mapped copy-on-write.

    ``np.load`` reads a member through :mod:`zipfile` (a copy and a CRC over every byte); a
    stored (uncompressed) member is a plain ``.npy`` at a known offset, so it can be mapped:
    pages are read when a recall first scans them, and writes stay private to the process.
    None when the member is compressed or not a plain array (the caller reads it instead).

    Raises:
        ValueError: the file is shorter than the member claims (a damaged snapshot).
    """
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"{path}: no local header for {name}")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        handle.seek(info.header_offset + 30 + name_len + extra_len)
        version = np.lib.format.read_magic(handle)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(handle)
        offset = handle.tell()
    if fortran or dtype.hasobject:
        return None
    return np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape)


def _restore(header: dict[str, Any], arrays: dict[str, Any]) -> tuple[ProjectIndex, str]:
    index = ProjectIndex()
    ids: list[str] = header["ids"]
    n = len(ids)
    metas = arrays["metas"].tobytes().decode("utf-8").split("\n") if n else []
    if arrays["vecs"].shape != (n, DIMENSIONS) or len(metas) != n or len(header["docs"]) != n:
        raise ValueError(f"snapshot rows disagree (ids {n}, metas {len(metas)})")
    index.ids = ids
    index.docs = header["docs"]
    index.metas = Metas(list(metas))
    index.pos = {memory_id: row for row, memory_id in enumerate(ids)}
    index.vecs = np.asarray(arrays["vecs"], dtype=np.float32)
    for name in _ARRAYS:
        setattr(index, name, arrays[name])
    index.synced_at = float(header["synced_at"])
    index.lexical = LexicalIndex.restore(arrays, header["lexical"])
    index.unsaved = 0
    return index, str(header["token"])
