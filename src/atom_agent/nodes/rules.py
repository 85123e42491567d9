"""A run's project rules: the ones its user states are remembered, the ones in force are carried."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from atom_agent.errors import MemoryStoreError
from atom_agent.memory.records import MemoryRecord
from atom_agent.memory.rules import in_force, record_rules, rules_block
from atom_agent.resources import Resources
from atom_agent.rule_text import RULES_HEADER, find_rules, norm_words, own_task, with_rules
from atom_agent.session import SessionContext
from atom_agent.telemetry import emit
from atom_agent.verification.clauses import Coverage

logger = logging.getLogger(__name__)

CONVENTION_FILES = ("AGENTS.md", "CONVENTIONS.md")
"""Files of a user's repository whose every sentence is a project rule (repo mode)."""
MAX_FILE_BYTES = 64_000


def carry_rules(res: Resources, run_id: str, task: str) -> tuple[str, dict[str, Any]]:
    """Remember the rules `task` (and the repo's conventions files) state; carry those in force.

    Returns the run's task text (the user's words, then the block of the earlier rules in force)
    and what run.json records: the rules stated, carried and superseded, by id.
    """
    task = own_task(task)
    session = SessionContext(session_id=run_id, project_id=res.ctx.project_id, run_id=run_id)
    stated: list[str] = []
    written: list[MemoryRecord] = []
    superseded: list[dict[str, str | None]] = []
    in_text: set[str] = set()  # the task's own words carry these: the block does not repeat them
    try:
        for origin, text, every_line in _sources(res, task):
            done = record_rules(res.memory, session, find_rules(text, every_line=every_line),
                                origin=origin)  # fmt: skip
            stated += [r.id for r in done.written]
            written += done.written
            if origin == "task":
                in_text |= {*done.unchanged, *(r.id for r in done.written)}
            superseded += [{"id": o, "by": n} for o, n in done.superseded]
        force = [r for r in in_force(res.memory, session) if r.id not in in_text]
    except (MemoryStoreError, OSError) as exc:  # a store that cannot be read or written: carry none
        logger.warning("project rules not carried: %s", exc)
        return task, {"error": str(exc)}
    block, carried = rules_block(force, res.ctx.rules_token_budget)
    info: dict[str, Any] = {"stated": stated, "carried": carried, "superseded": superseded}
    info["rules"] = {r.id: r.content for r in force if r.id in carried}
    info["words"] = {**info["rules"], **{r.id: r.content for r in written}}
    emit("rules.carried", run_id=run_id, stated=len(stated), carried=len(carried),
         superseded=len(superseded))  # fmt: skip
    return with_rules(task, block), info


def carried_block(info: dict[str, Any]) -> str:
    """The rules block a run recorded in run.json (its carried rules, in their words)."""
    words = info.get("rules") or {}
    ids = [i for i in info.get("carried") or [] if i in words]
    if not ids:
        return ""
    return RULES_HEADER + "\n" + "\n".join(f"- {' '.join(words[i].split())}" for i in ids)


def _sources(res: Resources, task: str) -> list[tuple[str, str, bool]]:
    """Where rules come from: the repository's conventions files first, then the task."""
    found: list[tuple[str, str, bool]] = []
    if res.ctx.repo:
        root = Path(res.ctx.repo).expanduser()
        for name in CONVENTION_FILES:
            path = root / name
            try:
                if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
                    text = path.read_text(encoding="utf-8", errors="replace")
                    found.append((name, _strip_markdown(text), True))
            except OSError as exc:
                logger.warning("%s not read: %s", path, exc)
    found.append(("task", task, False))
    return found


def _strip_markdown(text: str) -> str:
    """A conventions file's sentences: headings and code fences dropped, bullets kept as lines."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("#") or not line.strip():
            lines.append("")
            continue
        lines.append(line)
    return "\n".join(lines)


def rules_applied(info: dict[str, Any], clauses: Coverage) -> list[dict[str, Any]]:
    """Each rule the run carried or stated, with what executing its clauses' checks gave.

    A rule is a clause per demand it makes. It is *verified* when checks of every demand ran
    and held, *partly* verified when some demands were and the rest have no check that ran,
    *failed* when a check of it ran and did not hold, and only *carried* when no check of it
    ran (the prompt had it).
    """
    words: dict[str, str] = info.get("words") or {}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for origin in ("carried", "stated"):
        for rule_id in info.get(origin) or []:
            if rule_id in seen:  # a conventions file's rule, stated and carried by this run
                continue
            seen.add(rule_id)
            text = norm_words(words.get(rule_id, ""))
            mine = [c for c, t in clauses.texts.items() if norm_words(t) and norm_words(t) in text]
            held = [c for c in mine if c in clauses.verified]
            status = (
                "failed" if any(c in clauses.failed for c in mine)
                else "verified" if held and len(held) == len(mine)
                else "partly" if held
                else "carried"
            )  # fmt: skip
            out.append({"id": rule_id, "content": words.get(rule_id, ""), "origin": origin,
                        "status": status, "clauses": mine, "verified": held,
                        "unchecked": [c for c in mine if c not in held]})  # fmt: skip
    return out


def answered_rules(
    res: Resources, session: SessionContext, answers: list[dict[str, str]]
) -> list[str]:
    """Remember the standing rules the user stated in answers to the run's questions."""
    ids: list[str] = []
    for answer in answers:
        found = find_rules(str(answer.get("answer") or ""))
        if found:
            done = record_rules(res.memory, session, found, origin="answer")
            ids += [r.id for r in done.written]
    return ids
