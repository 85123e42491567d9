"""What a run learns for the next one: failures with evidence, interfaces, the user's decisions.

Every write is idempotent (keyed by run, step, attempt and kind), small, and
deduplicated against what the project already remembers.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from atom_agent.errors import MemoryValidationError
from atom_agent.memory import MemoryManager, MemoryRecord, WorkingMemory
from atom_agent.memory.changes import MemoryChanges
from atom_agent.memory.idempotent import add_once, memory_key
from atom_agent.memory.relevance import INTERFACE_TAG
from atom_agent.state import IMPL_FILE, PlanStep

logger = logging.getLogger(__name__)

_MAX_LINES = 14
_LINE_CHARS = 160


# --- interfaces ----------------------------------------------------------------------------------


def interface_lines(source: str) -> list[str]:
    """The public top-level names of a module: signature and first docstring line, read with ast.

    Classes list their constructor and public methods, indented. Unparsable code gives [].
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            lines.append(_signature(node) + _doc(node))
        elif isinstance(node, ast.ClassDef) and _public(node.name):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            lines.append(f"class {node.name}" + (f"({bases})" if bases else "") + _doc(node))
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    _public(item.name) or item.name == "__init__"
                ):
                    lines.append("    " + _signature(item) + _doc(item))
    return [line[:_LINE_CHARS] for line in lines[:_MAX_LINES]]


def _public(name: str) -> bool:
    return not name.startswith("_")


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def _doc(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    doc = ast.get_docstring(node)
    first = doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
    return f" — {first[:100]}" if first else ""


def _names(lines: Iterable[str]) -> list[str]:
    found = (re.match(r"(?:async def|def|class) (\w+)", line) for line in lines)
    return [m.group(1) for m in found if m]


def record_interface(
    memory: MemoryManager,
    changes: MemoryChanges,
    step: PlanStep,
    artifacts: Path,
    *,
    earlier: Sequence[MemoryRecord] = (),
) -> list[str]:
    """Add to `changes` what a committed step's ``impl.py`` exposes, superseding older ones.

    An older interface memory whose names are all among the new one's is superseded by it (the
    new commit is what the code now is), whether stored or among `earlier` (records this run
    learned and has not written yet). Returns the id to be written ([] when nothing is
    exposed); `memory` is only read.
    """
    impl = artifacts / IMPL_FILE
    if not impl.is_file():
        return []
    lines = interface_lines(impl.read_text(encoding="utf-8", errors="replace"))
    names = _names(line for line in lines if not line.startswith(" "))
    if not names:
        return []
    content = f"Code committed for '{step.title[:80]}' (impl.py) defines:\n" + "\n".join(
        f"- {line.strip() if not line.startswith(' ') else '  ' + line.strip()}" for line in lines
    )
    record = add_once(
        changes,
        "interface",
        {
            "content": content[:2000],
            "type": "fact",
            "confidence": 0.9,  # read from code that passed its checks
            "source_type": "reflector",
            "importance": 0.6,
            "rationale": f"{INTERFACE_TAG}{step.id}; names: {', '.join(names)}",
        },
    )
    _supersede_older(memory, changes, record, set(names), earlier)
    return [record.id]


def _supersede_older(
    memory: MemoryManager,
    changes: MemoryChanges,
    new: MemoryRecord,
    names: set[str],
    earlier: Sequence[MemoryRecord],
) -> None:
    # Runs again after a crash: what it superseded already is out of recall, so nothing repeats.
    older = memory.recall(
        changes.session, " ".join(sorted(names)), type="fact", min_confidence=0.0, limit=20
    )
    stored = {r.id for r in older}
    for record in [*older, *(r for r in earlier if r.id not in stored)]:
        why = record.rationale or ""
        if record.id == new.id or not why.startswith(INTERFACE_TAG) or "names: " not in why:
            continue
        theirs = {n.strip() for n in why.split("names: ", 1)[1].split(",") if n.strip()}
        if theirs and theirs <= names:
            changes.forget(
                record.id, reason="a later commit of the same interface", replacement_id=new.id
            )


def record_lesson(
    memory: MemoryManager,
    changes: MemoryChanges,
    kind: str,
    content: str,
    *,
    confidence: float,
    rationale: str,
    earlier: Sequence[MemoryRecord] = (),
) -> list[str]:
    """Add a lesson to `changes` once.

    An identical live lesson of the project, or one among `earlier` (learned by this run, not
    written yet), makes it a no-op.
    """
    text = content.strip()[:2000]
    if not text:
        return []
    recalled = memory.recall(
        changes.session, text, type="lesson_learned", min_confidence=0.0, limit=5
    )
    same = [
        r
        for r in [*recalled, *(r for r in earlier if r.type == "lesson_learned")]
        if _norm(r.content) == _norm(text)
    ]
    key = memory_key(changes.session, kind)
    if any(r.id == key for r in same):
        return [key]  # this very write, made before a crash
    if same:
        return []  # learned already (an earlier attempt or run)
    record = add_once(
        changes,
        kind,
        {
            "content": text,
            "type": "lesson_learned",
            "confidence": confidence,
            "source_type": "reflector",
            "importance": 0.6,
            "rationale": rationale,
        },
    )
    return [record.id]


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


# --- the finish node: the user's decisions, promoted candidates ----------------------------------


def record_decisions(changes: MemoryChanges, answers: Iterable[Mapping[str, str]]) -> list[str]:
    """Remember each answer the user gave in ``ask_user`` as a decision (the i-th answer once)."""
    ids: list[str] = []
    for i, answer in enumerate(answers):
        question = str(answer.get("question", "")).strip()[:600]
        reply = str(answer.get("answer", "")).strip()[:1000]
        if not reply:
            continue
        asked = f" (asked: {question})" if question else ""
        record = add_once(
            changes,
            f"decision-{i}",
            {
                "content": f"The user decided: {reply}{asked}",
                "type": "decision",
                "confidence": 0.9,
                "source_type": "user",
                "importance": 0.7,
                "rationale": "answer to a question the agent asked during a run",
            },
        )
        ids.append(record.id)
    return ids


def promote_once(
    changes: MemoryChanges,
    candidates: Iterable[Mapping[str, Any]],
    threshold: float,
) -> list[str]:
    """Promote working-memory candidates at or above `threshold`, each once per run.

    Promoted records get ``source_type`` system and keep the candidate's importance; each one's
    id is keyed by its content, so a finish node re-run after a crash does not promote it
    again. Adds them to `changes`.
    """
    working = WorkingMemory(changes.session)
    for noticed in candidates:
        working.note(
            noticed["content"],
            type=noticed.get("type", "lesson_learned"),
            importance=noticed["importance"],
        )
    ids: list[str] = []
    for c in working.above(threshold):
        digest = hashlib.sha256(c.key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        try:
            record = add_once(
                changes,
                f"promoted-{digest}",
                {
                    "content": c.content,
                    "type": c.type,
                    "confidence": 0.7,  # noticed by the system, not confirmed
                    "importance": c.importance,
                    "source_type": "system",
                },
            )
        except MemoryValidationError as exc:
            logger.warning("a working-memory candidate cannot be promoted: %s", exc)
            continue
        ids.append(record.id)
    return ids
