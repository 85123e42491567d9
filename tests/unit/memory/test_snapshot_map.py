"""A snapshot's arrays are mapped from the file, not read: copy-on-write, damage detected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atom_agent.memory.snapshot import _mapped, load


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


def test_a_compressed_member_is_read_instead(tmp_path: Path) -> None:
    path = tmp_path / "c.npz"
    with open(path, "wb") as out:
        np.savez_compressed(out, vecs=np.ones((2, 2), dtype=np.float32))
    vecs = _mapped(path)["vecs"]
    assert not isinstance(vecs, np.memmap) and np.array_equal(vecs, np.ones((2, 2)))


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
