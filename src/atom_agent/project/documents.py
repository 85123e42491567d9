"""Documents a task points to (``the README shows …``): the passages that bear on the target.

A task may say where the behaviour is described outside the code: a README, a changelog, a
docs page. A file of the project whose name the task mentions (``README`` → ``README.md``,
``docs/usage.rst``) is searched for the task's quoted terms and the target's name, and the
lines around the first hits go into the edit prompt, within a token budget.
"""

from __future__ import annotations

import re
from pathlib import Path

DOC_TOKENS = 600
"""Token budget of the passages from documents the task names."""
_DOC_SUFFIXES = (".md", ".rst", ".txt", "")
_CONTEXT_LINES = 12


def named_documents(root: Path, task: str) -> list[Path]:
    """Non-Python files at the project's top or under docs/ whose name the task mentions."""
    words = {w.lower() for w in re.findall(r"[A-Za-z][\w.-]+", task)}
    found: list[Path] = []
    candidates = [*sorted(root.glob("*")), *sorted((root / "docs").glob("*"))]
    for path in candidates:
        if not path.is_file() or path.suffix.lower() not in _DOC_SUFFIXES:
            continue
        name = path.name.lower()
        if (
            name in words
            or path.stem.lower() in words
            or path.relative_to(root).as_posix().lower() in words
        ):
            found.append(path)
    return found


def _terms(task: str, qualname: str) -> list[str]:
    """What to look for: the task's quoted terms, then the target's name and its parts."""
    quoted = re.findall(r"`([^`\n]{2,40})`", task)
    name = qualname.split(".")[-1].strip("_")
    parts = [p for p in name.split("_") if len(p) > 3]
    return list(dict.fromkeys([*quoted, name, *parts]))


def passages(path: Path, terms: list[str], budget_tokens: int) -> str:
    """Numbered lines around the first hits of `terms` in `path`, merged, within the budget."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    words = [re.compile(rf"(?<![\w]){re.escape(t)}(?![\w])", re.IGNORECASE) for t in terms
             if len(t) >= 3]  # fmt: skip
    hits: list[int] = []
    for word in words:
        hits += [i for i, line in enumerate(lines) if word.search(line)][:3]
    windows: list[tuple[int, int]] = []
    for i in sorted(set(hits)):
        start, end = max(0, i - 3), min(len(lines), i + _CONTEXT_LINES)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))

    # Passages where more of the terms meet first (a format's own section before a list that
    # only names it), then in the document's order.
    def score(window: tuple[int, int]) -> int:
        text = "\n".join(lines[window[0] : window[1]])
        return sum(len(w.findall(text)) for w in words)

    chosen: list[tuple[int, int]] = []
    used = 0
    for window in sorted(windows, key=lambda w: (-score(w), w[0])):
        cost = len("\n".join(lines[window[0] : window[1]])) // 4 + 2  # ≈ 4 characters a token
        if used + cost <= budget_tokens:
            chosen.append(window)
            used += cost
    out: list[str] = []
    for start, end in sorted(chosen):
        out += [*(f"{n + 1:5d}| {lines[n]}" for n in range(start, end)), "    ⋮|"]
    return "\n".join(out)


def documents_for(root: Path, task: str, qualname: str, budget_tokens: int = DOC_TOKENS) -> str:
    """The prompt section of the documents the task names ('' when it names none)."""
    sections = []
    for path in named_documents(root, task):
        text = passages(path, _terms(task, qualname), budget_tokens)
        if text:
            sections.append(f"From `{path.relative_to(root).as_posix()}`:\n{text}")
    return ("\n" + "\n\n".join(sections) + "\n") if sections else ""
