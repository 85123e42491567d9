"""The relevance gate: a recalled memory reaches a prompt only for a name, file or purpose."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from atom_agent.memory import MemoryRecord, MemoryType, SourceType
from atom_agent.memory.relevance import (
    INTERFACE_TAG,
    StepFocus,
    identifiers,
    read_recalled,
    recalled_entries,
    relevance,
)

RLE = StepFocus.of(
    task="Write rle_decode(s) that expands run-length encoded text such as '3a2b'.",
    title="Run-length decoder",
    description="Decode run-length encoded strings: digits give the repeat count of a letter.",
    defines=["rle_decode"],
    files=["impl.py", "test.py", "codec_table.json"],
)
MATRIX = StepFocus.of(
    task="Implement a Matrix class with add, mul and transpose.",
    title="Matrix arithmetic",
    description="Matrix addition, multiplication and transposition of row lists.",
    defines=["Matrix"],
)
INTERFACE_RATIONALE = f"{INTERFACE_TAG}lru; names: LRUCache"


def _record(
    content: str, type: str = "lesson_learned", rationale: str | None = None
) -> MemoryRecord:
    return MemoryRecord(
        id="m1",
        content=content,
        type=MemoryType(type),
        confidence=0.9,
        source_type=SourceType("reflector"),
        rationale=rationale,
        importance=0.5,
        project_id="p",
        session_id="s",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


CASES = [
    # (focus, content, type, rationale, expected reason or None)
    (RLE, "check `rle_decode('3a') == 'aaa'` got 'a3'", "lesson_learned", None,
     "shares name rle_decode"),
    (MATRIX, "In 'Matrix ops' (Matrix), code was rejected: check `Matrix([[1]]).T`", "fact",
     None, "shares name Matrix"),
    (MATRIX, "a Matrix_helper module exists", "fact", None, None),  # a whole word, not a part
    (RLE, "codec_table.json maps escape codes to letters", "fact", None,
     "shares file codec_table.json"),
    (RLE, "impl.py and test.py are written first", "fact", None, None),  # every step has them
    (RLE, "Decoding run-length input: a repeat count may have several digits.",
     "lesson_learned", None, "shares purpose: count, decoder, digits, length, repeat"),
    (RLE, "Decoding run-length input: a repeat count may have several digits.",
     "convention", None, "shares purpose: count, decoder, digits, length, repeat"),
    # The same words from a fact, or from a lesson about code of its own, are not enough.
    (RLE, "Decoding run-length input: a repeat count may have several digits.", "fact", None,
     None),
    (RLE, "In parse_counts, a repeat count may have several digits when decoding.",
     "lesson_learned", None, None),
    (RLE, "Decoding is hard.", "lesson_learned", None, None),  # one shared word of many
    (RLE, "The office coffee machine is on floor three", "lesson_learned", None, None),
    # An interface memory passes on a shared name only, whatever words it shares.
    (MATRIX,
     "Code committed for 'matrix multiplication cache' (impl.py) defines:\n"
     "- class LRUCache — addition and multiplication of cached row lists",
     "fact", INTERFACE_RATIONALE, None),
    (RLE,
     "Code committed for 'codec_table.json loader' (impl.py) defines:\n- def load_table(path)",
     "fact", INTERFACE_RATIONALE, None),  # a shared file is not enough for an interface
    (MATRIX,
     "Code committed for 'linear algebra' (impl.py) defines:\n- class Matrix — rows of numbers",
     "fact", INTERFACE_RATIONALE, "shares name Matrix"),
]  # fmt: skip


@pytest.mark.parametrize(("focus", "content", "type", "rationale", "expected"), CASES)
def test_the_gate_names_what_a_memory_shares_with_the_step(
    focus: StepFocus, content: str, type: str, rationale: str | None, expected: str | None
) -> None:
    reason = relevance(focus, _record(content, type, rationale))
    assert (str(reason) if reason is not None else None) == expected


def test_a_terse_step_passes_a_lesson_on_its_one_significant_word() -> None:
    terse = StepFocus.of(task="add", title="Step adder", description="Implement adder.")
    assert terse.words == {"adder"}  # "step" and "implement" say nothing
    lesson = _record("Adder steps: test integer addition before edge cases.")
    assert str(relevance(terse, lesson)) == "shares purpose: adder"


def test_the_task_names_identifiers_the_step_does_not_define() -> None:
    assert {"rle_decode"} <= RLE.names and "Matrix" in MATRIX.names
    assert identifiers("The class is small; a Matrix class, len(x) and `Point`.") == {
        "Matrix",
        "Point",
    }  # not "The", not the builtin len


def test_verdict_entries_carry_why_and_old_bare_ids_stay_readable() -> None:
    entries = recalled_entries(["a", "b"], {"a": "shares name f"})
    assert entries == [{"id": "a", "why": "shares name f"}, {"id": "b", "why": ""}]
    assert read_recalled([*entries, "old-id", {"no": "id"}]) == [
        ("a", "shares name f"),
        ("b", ""),
        ("old-id", ""),
    ]
