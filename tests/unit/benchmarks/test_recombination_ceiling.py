"""benchmarks/recombination_ceiling.py: per-function choices among modules, scored by an oracle."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "recombination_ceiling",
    Path(__file__).resolve().parents[3] / "benchmarks" / "recombination_ceiling.py",
)
assert _SPEC is not None and _SPEC.loader is not None
ceiling = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ceiling)

# An oracle in the shape of shared/devtasks/oracle.py: _load(path, name, ns) and CHECKS.
ORACLE = """\
import importlib.util


def _load(path, name, ns):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception:
        return
    ns.update({k: v for k, v in vars(mod).items() if not k.startswith("_")})


def check_pair(ns):
    assert ns["enc"]("ab") == "ba", "enc"
    assert ns["Box"](2).dec("ba") == "abab", "dec"


CHECKS = {"t-pair": check_pair}
"""
# Each module has one unit right: only a recombination of the two passes.
LEFT = """\
def enc(s):
    return s[::-1]


class Box:
    def __init__(self, n):
        self.n = n

    def dec(self, s):
        return s
"""
RIGHT = """\
import itertools


def enc(s):
    return s


class Box:
    def __init__(self, n):
        self.n = n

    def dec(self, s):
        return _twice(s[::-1], self.n)


def _twice(s, n):
    return "".join(itertools.repeat(s, n))
"""


def _written(root: Path, name: str, text: str) -> None:
    path = root / "runs" / f"{name}.t-pair" / "steps" / "s1" / "committed" / "artifacts"
    path.mkdir(parents=True)
    (path / "impl.py").write_text(text)


def test_units_are_functions_and_methods() -> None:
    assert set(ceiling.units(RIGHT)) == {"enc", "Box.__init__", "Box.dec", "_twice"}


def test_a_swap_does_not_bring_a_helper_the_base_already_has() -> None:
    base = LEFT + "\n\ndef _twice(s, n):\n    return s\n"
    mixed = ceiling.swapped(base, "Box.dec", RIGHT)
    assert mixed is not None and mixed.count("def _twice") == 1


def test_a_swapped_method_brings_its_helpers_constants_and_imports() -> None:
    mixed = ceiling.swapped(LEFT, "Box.dec", RIGHT)
    namespace: dict[str, object] = {}
    exec(compile(mixed, "mixed", "exec"), namespace)  # noqa: S102
    assert namespace["enc"]("ab") == "ba"  # type: ignore[operator]
    assert namespace["Box"](2).dec("ba") == "abab"  # type: ignore[operator]


def test_a_recombination_passes_where_no_single_module_does(tmp_path: Path) -> None:
    oracle = tmp_path / "oracle.py"
    oracle.write_text(ORACLE)
    _written(tmp_path / "a", "plain", LEFT)
    _written(tmp_path / "b", "sample0", RIGHT)
    sources = ceiling.modules([tmp_path / "a", tmp_path / "b"], "t-pair")
    assert len(sources) == 2
    work = tmp_path / "work"
    work.mkdir()
    single, mixed, best = ceiling.search(sources, ceiling.scorer(oracle, "t-pair", work))
    assert single[1] != "PASS" and single[0] < ceiling.PASSED
    assert mixed == (ceiling.PASSED, "PASS")
    assert "_twice" in best and "s[::-1]" in best
