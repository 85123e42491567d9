"""A snapshot's arrays are mapped from the file, not read: copy-on-write, damage detected."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from atom_agent.memory import MemoryManager
from atom_agent.memory.snapshot import _mapped, load
from atom_agent.session import SessionContext


def _npz(path: Path, **arrays: np.ndarray) -> Path:
    with open(path, "wb") as out:
        np.savez(out, **arrays)
    return path


def test_every_array_is_mapped_and_writes_stay_in_the_process(tmp_path: Path) -> None:
    vecs = np.arange(12, dtype=np.float32).reshape(3, 4)
    header = np.frombuffer(b'{"a": 1}', dtype=np.uint8)
    path = _npz(tmp_path / "s.npz", vecs=vecs, header=header, empty=np.zeros(0, dtype=np.int64))
    arrays = _mapped(path)
    assert sorted(arrays) == ["empty", "header", "vecs"]
    assert arrays["header"].tobytes() == b'{"a": 1}' and arrays["empty"].shape == (0,)
    mapped = arrays["vecs"]
    assert isinstance(mapped, np.memmap) and isinstance(arrays["header"], np.memmap)
    assert np.array_equal(mapped, vecs) and mapped.dtype == np.float32
    mapped[0, 0] = 99.0  # a mirror updates rows in place
    with np.load(path) as data:
        assert data["vecs"][0, 0] == 0.0  # the file (other processes' cache) is unchanged


def test_a_compressed_member_is_no_snapshot_of_ours(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    with open(path, "wb") as out:
        np.savez_compressed(out, vecs=np.ones((2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="compressed"):
        _mapped(path)
    assert load(path, "c") is None  # a cache: rebuilt from Chroma


def test_a_truncated_snapshot_is_an_error_not_garbage(tmp_path: Path) -> None:
    path = _npz(tmp_path / "t.npz", vecs=np.ones((1000, 8), dtype=np.float32))
    data = path.read_bytes()
    # Keep the zip directory (at the end) but lose the vectors' bytes in the middle.
    path.write_bytes(data[:2000] + data[-200:])
    with pytest.raises(Exception):  # noqa: B017,PT011 - zipfile or numpy, either refuses
        _mapped(path)


def test_a_snapshot_that_is_no_zip_any_more_is_ignored(tmp_path: Path) -> None:
    header = np.frombuffer(b'{"format": 2, "collection": "c"}', dtype=np.uint8)
    path = _npz(tmp_path / "z.npz", vecs=np.ones((1000, 8), dtype=np.float32), header=header)
    data = path.read_bytes()
    path.write_bytes(data[:2000] + data[-200:])
    assert load(path, "c") is None  # a cache: rebuilt from Chroma (it raised BadZipFile before)


def test_a_mirror_opened_from_a_snapshot_gets_its_vectors_in_its_own_memory(
    tmp_path: Path,
) -> None:
    # Recall reads every vector; from the file mapping that was ≈ 4× slower than from ordinary
    # memory, so the mapping is replaced by a copy made in the background under the mirror's
    # lock (no write can land in the mapping meanwhile and be lost).
    session = SessionContext(session_id="s", project_id="p")
    with MemoryManager.open(tmp_path) as first:
        first.remember_many(
            session, [{"content": f"record {i} of the snapshot"} for i in range(20)]
        )
        first.recall(session, "record")  # a mirror, saved as a snapshot at close
    with MemoryManager.open(tmp_path) as second:
        sync = second._sync("p")
        with second.backend.lock:  # the copy waits for the lock: what we see here is the mapping
            index = sync.index()
            assert not index.vecs.flags.owndata  # a view of the snapshot's mapping
            before = np.array(index.vecs)
        for thread in threading.enumerate():
            if thread.name == "atom-memory-vectors":
                thread.join(timeout=30)
        assert index.vecs.flags.owndata and np.array_equal(index.vecs, before)
        found = second.recall(session, "record 7 of the snapshot")
        assert found[0].content == "record 7 of the snapshot"
