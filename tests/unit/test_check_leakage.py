"""The leakage check (`scripts/check_leakage.py`, run by `make lint`) on planted shared sets."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_leakage.py"
TASK = (
    "Write frobnicate_widgets(items: list[str]) -> list[str] that returns the widgets in the "
    "order a careful gardener would plant them along the fence. Also write add(x) and "
    "Table(rows). Include pytest tests."
)


@pytest.fixture(scope="module")
def leakage() -> ModuleType:
    """The script, imported as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("check_leakage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _shared(tmp_path: Path) -> Path:
    shared = tmp_path / "shared"
    (shared / "devtasks").mkdir(parents=True)
    line = json.dumps({"id": "d-garden", "task": TASK})
    (shared / "devtasks" / "tasks.jsonl").write_text(line + "\n", encoding="utf-8")
    (shared / "devtasks" / "README.md").write_text(
        "Each task here is scored by an oracle that the agent never sees during a run.\n",
        encoding="utf-8",
    )
    return shared


def _src(tmp_path: Path, text: str) -> Path:
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "mod.py").write_text(text, encoding="utf-8")
    return tmp_path / "src"


def _run(leakage: ModuleType, shared: Path, src: Path) -> tuple[int, list[str]]:
    findings = leakage.check(shared, src)
    code = leakage.main(["--shared", str(shared), "--src", str(src)])
    return code, [f"{f.kind}: {f.text}" for f in findings]


def test_a_planted_fragment_is_flagged_reworded_only_by_punctuation(
    leakage: ModuleType, tmp_path: Path
) -> None:
    src = _src(tmp_path, '# the order a careful\n# gardener, would "plant" them along\nx = 1\n')
    code, found = _run(leakage, _shared(tmp_path), src)
    assert code == 1
    assert found == ["fragment: the order a careful gardener would plant them"]


def test_a_readme_sentence_is_a_source_of_fragments(leakage: ModuleType, tmp_path: Path) -> None:
    src = _src(tmp_path, '"""Scored by an oracle that the agent never sees during a run."""\n')
    code, found = _run(leakage, _shared(tmp_path), src)
    assert (code, found) == (1, ["fragment: scored by an oracle that the agent never"])


def test_a_planted_function_name_and_task_id_are_flagged(
    leakage: ModuleType, tmp_path: Path
) -> None:
    src = _src(tmp_path, 'EXAMPLE = "frobnicate_widgets([])"  # as in d-garden\n')
    code, found = _run(leakage, _shared(tmp_path), src)
    assert code == 1
    assert found == ["function name: frobnicate_widgets", "task id: d-garden"]


def test_common_words_the_task_names_are_not_flagged(leakage: ModuleType, tmp_path: Path) -> None:
    src = _src(tmp_path, "def add(x):\n    return Table(rows=[x])  # seven words of the order\n")
    code, found = _run(leakage, _shared(tmp_path), src)
    assert (code, found) == (0, [])


def test_it_skips_with_a_note_when_the_shared_folder_is_absent(
    leakage: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _src(tmp_path, 'EXAMPLE = "frobnicate_widgets([])"\n')
    code = leakage.main(["--shared", str(tmp_path / "absent"), "--src", str(src)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("\n") == 1 and "skipped" in out


def test_the_product_carries_nothing_of_the_development_sets(
    leakage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    # What `make lint` runs; skips (exit 0) on a clone without ../shared.
    code = leakage.main([])
    assert code == 0, capsys.readouterr().out
