"""benchmarks/early_stop.py: the share of recorded replies the early stop would not decode."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

from langchain_core.load import dumps
from langchain_core.messages import AIMessage

_SPEC = importlib.util.spec_from_file_location(
    "early_stop", Path(__file__).resolve().parents[3] / "benchmarks" / "early_stop.py"
)
assert _SPEC is not None and _SPEC.loader is not None
early_stop = importlib.util.module_from_spec(_SPEC)
sys.modules["early_stop"] = early_stop  # its dataclasses look their module up
_SPEC.loader.exec_module(early_stop)

MODULE = (
    "```python\ndef double(x):\n    return 2 * x\n\n\n# tests\nimport pytest\n\n\n"
    "def test_double():\n"
    + "".join(f"    assert double({i}) == {2 * i}\n" for i in range(6))
    + "```\n"
)
LOOP = "```python\n" + "".join(
    f"assert allocate(100, [1, 2, 3], {i}) == [17, 12, 11]\n" for i in range(40)
)
PROSE = "The function doubles its argument.\n"


def _cache(path: Path, texts: list[tuple[str, int, str]]) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for n, (text, tokens, finish) in enumerate(texts):
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": 1, "output_tokens": tokens, "total_tokens": tokens + 1},
            response_metadata={"finish_reason": finish},
        )
        db.execute("INSERT INTO replies VALUES (?, ?)", (f"k{n}:0", dumps(message)))
    db.commit()
    db.close()
    return path


def test_each_way_of_stopping_is_counted_with_the_tokens_it_would_not_decode(
    tmp_path: Path,
) -> None:
    cache = _cache(
        tmp_path / "cache.sqlite",
        [(MODULE, 100, "stop"), (LOOP, 1024, "length"), (PROSE, 10, "stop")],
    )
    n, tokens, tallies = early_stop.measure(cache)
    assert (n, tokens) == (3, 1134)
    tests_after = tallies["tests after the code"]
    assert tests_after.ended == 1 and tests_after.changed == [] and tests_after.cut_loops == 0
    # The module's tests are about two thirds of its characters.
    assert 50 < tests_after.saved_tokens < 80
    loops = tallies["loops"]
    assert loops.ended == 1 and loops.changed == []
    assert loops.cut_loops == 1  # the contract it reads has fewer asserts: a loop's tail
    assert loops.saved_tokens > 600  # twelve of forty lines kept
    assert early_stop.main([str(cache)]) == 0
    assert early_stop.main([str(tmp_path / "missing.sqlite")]) == 2
