"""Fail when the product carries text or function names of our development sets.

The development sets (``../shared/*/``: devtasks, streams, repotasks) are what the agent is tuned
on; a product judged on tasks it has not seen must not carry the ones it was tuned on. This check
reads their task texts (``devtasks/tasks.jsonl``, ``streams/*.jsonl``, the ``task`` fields of
``repotasks/manifest.json``) and every ``README.md`` in a subfolder, and reports, for every text
file under ``src/`` (code, prompts, comments, schemas):

- **fragments**: eight or more consecutive words of a shared text (words are runs of letters,
  digits and underscores, compared case-blind; punctuation and comment markers are ignored, so a
  phrase still matches when it is reworded only by its punctuation or split over lines);
- **task ids** with a hyphen (``d-rpn``, ``s-money``, a repotask's id);
- **function names**: names of the functions and classes the shared tasks ask to write (every
  identifier a task text writes as a call, ``name(``, and every part of a repotask's
  ``qualname``), except those that are common English or Python words.

What counts as common, so that ``add``, ``parse`` or ``Table`` are never flagged: a name whose
lower case is a whole word of the WordPiece vocabulary shipped with the package
(``memory/data/tokenizer.json``, the ~30k most frequent English words of the embedding model) or
a word of Python's own reference text (``pydoc_data.topics``), or a builtin or keyword. Every
other name is distinctive: compound names (``snake_case`` with two or more parts, ``CamelCase``
with two or more capitals) and coined single words. A compound or capitalised name is flagged
wherever ``src/`` writes it as a whole identifier; a lowercase single word only where it is
written as a call (``word(``), because the same word in prose ("redo it") teaches nothing of the
task. ``ALLOWED`` lists the few names that are also a public API ``src/`` calls, with the reason.

Exit status 1 with one line per finding; 0 when clean; 0 with a one-line note when ``../shared``
is absent (a clone without the development sets has nothing to compare against).

Usage: ``python scripts/check_leakage.py [--shared DIR] [--src DIR]``.
"""

from __future__ import annotations

import argparse
import builtins
import json
import keyword
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "src" / "atom_agent" / "memory" / "data" / "tokenizer.json"
"""The embedding model's WordPiece vocabulary: ~30k common English words (see above)."""
FRAGMENT_WORDS = 8
"""A shared phrase this long or longer is a leak; shorter runs are common English."""

VENDORED = ("memory/data/",)
"""Files under src/ that are third-party data, not ours (the embedding model's tokenizer)."""

TEXT_SUFFIXES = {".py", ".md", ".txt", ".json", ".toml", ".ini", ".cfg", ".yaml", ".yml"}

ALLOWED = {
    "add_row": "rich.table.Table.add_row, which the CLI's tables call",
}
"""Distinctive names that src/ may use because they are a library's public API."""

_WORD = re.compile(r"[A-Za-z0-9_]+")
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Finding:
    """One leak: where in src/ it is, and what of the shared sets it repeats."""

    path: str
    line: int
    kind: str
    text: str

    def __str__(self) -> str:
        """One line, as a compiler writes it."""
        return f"{self.path}:{self.line}: {self.kind}: {self.text}"


def task_texts(shared: Path) -> list[str]:
    """The task texts of every development set under `shared`."""
    texts: list[str] = []
    for jsonl in [shared / "devtasks" / "tasks.jsonl", *sorted(shared.glob("streams/*.jsonl"))]:
        if jsonl.is_file():
            for line in jsonl.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.append(str(json.loads(line).get("task", "")))
    manifest = shared / "repotasks" / "manifest.json"
    if manifest.is_file():
        texts.extend(str(t.get("task", "")) for t in json.loads(manifest.read_text())["tasks"])
    return texts


def task_ids(shared: Path) -> set[str]:
    """The ids of the shared tasks and sets that are distinctive (``d-rpn``, ``s-money``).

    Short ids without a hyphen (``m1``, ``q3``) are left out: they are ordinary tokens.
    """
    ids = {p.stem for p in shared.glob("streams/*.jsonl")}
    for jsonl in [shared / "devtasks" / "tasks.jsonl", *shared.glob("streams/*.jsonl")]:
        if jsonl.is_file():
            ids.update(
                str(json.loads(line).get("id", ""))
                for line in jsonl.read_text(encoding="utf-8").splitlines()
                if line.strip()
            )
    manifest = shared / "repotasks" / "manifest.json"
    if manifest.is_file():
        ids.update(str(t.get("id", "")) for t in json.loads(manifest.read_text())["tasks"])
    return {i for i in ids if "-" in i}


def readme_texts(shared: Path) -> list[str]:
    """The README of every development set (its prose teaches the task as much as the task)."""
    return [p.read_text(encoding="utf-8") for p in sorted(shared.glob("*/README.md"))]


def asked_names(shared: Path) -> set[str]:
    """Every name the shared tasks ask to write: calls in their texts, repotask qualnames."""
    names: set[str] = set()
    for text in task_texts(shared):
        names.update(_CALL.findall(text))
    manifest = shared / "repotasks" / "manifest.json"
    if manifest.is_file():
        for task in json.loads(manifest.read_text())["tasks"]:
            names.update(str(task.get("qualname", "")).split("."))
    return {n.lstrip("_") for n in names if n and not (n.startswith("__") and n.endswith("__"))}


def common_words(tokenizer: Path = TOKENIZER) -> set[str]:
    """Lowercase words that are common English or Python (see the module docstring)."""
    words = {w.lower() for w in dir(builtins)} | set(keyword.kwlist)
    try:
        from pydoc_data.topics import topics
    except ImportError:  # a Python built without its docs: the vocabulary below still holds
        topics = {}
    for text in topics.values():
        words.update(w.lower() for w in _IDENT.findall(text))
    if tokenizer.is_file():
        vocab = json.loads(tokenizer.read_text(encoding="utf-8"))["model"]["vocab"]
        words.update(w for w in vocab if w.isalpha())
    return words


def is_compound(name: str) -> bool:
    """``snake_case`` with two or more parts, or ``CamelCase`` with two or more capitals."""
    parts = [p for p in name.split("_") if p]
    return len(parts) > 1 or sum(c.isupper() for c in name) > 1


def distinctive_names(names: Iterable[str], common: set[str]) -> set[str]:
    """The names that identify a shared task: not common words, not allowed APIs."""
    return {
        n
        for n in names
        if n not in ALLOWED and (is_compound(n) or n.lower() not in common) and len(n) > 2
    }


def shingles(words: list[str], size: int = FRAGMENT_WORDS) -> Iterator[tuple[str, ...]]:
    """Every run of `size` consecutive words."""
    for i in range(len(words) - size + 1):
        yield tuple(words[i : i + size])


def shared_shingles(texts: Iterable[str]) -> dict[tuple[str, ...], str]:
    """Each eight-word run of the shared texts, mapped to its words as the texts write them."""
    found: dict[tuple[str, ...], str] = {}
    for text in texts:
        words = _WORD.findall(text)
        for run in shingles(words):
            found.setdefault(tuple(w.lower() for w in run), " ".join(run))
    return found


def source_files(src: Path) -> Iterator[Path]:
    """Our text files under src/ (vendored third-party data and caches left out)."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src).as_posix()
        if (
            path.is_file()
            and path.suffix in TEXT_SUFFIXES
            and "__pycache__" not in path.parts
            and not any(v in rel for v in VENDORED)
        ):
            yield path


def scan_text(
    text: str,
    rel: str,
    fragments: dict[tuple[str, ...], str],
    names: set[str],
    ids: Iterable[str] = (),
) -> list[Finding]:
    """The leaks in one file's text."""
    findings: list[Finding] = []
    matches = list(_WORD.finditer(text))
    words = [m.group().lower() for m in matches]
    last_end = -1
    for i, run in enumerate(shingles(words)):
        if run in fragments and i >= last_end:
            line = text.count("\n", 0, matches[i].start()) + 1
            findings.append(Finding(rel, line, "fragment", fragments[run]))
            last_end = i + FRAGMENT_WORDS  # one finding for a long copied passage
    for m in _IDENT.finditer(text):
        name = m.group()
        bare = name.lstrip("_")
        if bare not in names:
            continue
        is_call = text[m.end() : m.end() + 1] == "("
        if is_compound(bare) or bare[:1].isupper() or is_call:
            line = text.count("\n", 0, m.start()) + 1
            findings.append(Finding(rel, line, "function name", name))
    for task_id in ids:
        for m in re.finditer(rf"(?<![\w-]){re.escape(task_id)}(?![\w-])", text):
            line = text.count("\n", 0, m.start()) + 1
            findings.append(Finding(rel, line, "task id", task_id))
    return sorted(findings, key=lambda f: f.line)


def check(shared: Path, src: Path) -> list[Finding]:
    """Every leak of `shared` into `src`."""
    fragments = shared_shingles([*task_texts(shared), *readme_texts(shared)])
    names = distinctive_names(asked_names(shared), common_words())
    ids = task_ids(shared)
    findings: list[Finding] = []
    for path in source_files(src):
        text = path.read_text(encoding="utf-8", errors="replace")
        findings.extend(
            scan_text(text, path.relative_to(src.parent).as_posix(), fragments, names, ids)
        )
    return findings


def main(argv: list[str] | None = None) -> int:
    """Print the leaks; exit 1 when there are any."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"check_leakage: skipped, no development sets at {args.shared}")  # noqa: T201
        return 0
    findings = check(args.shared, args.src)
    for finding in findings:
        print(finding)  # noqa: T201
    if findings:
        print(  # noqa: T201
            f"check_leakage: {len(findings)} leak(s) of {args.shared} in {args.src}: "
            "replace them with neutral examples of your own"
        )
        return 1
    print("check_leakage: no text or function name of the development sets in src/")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
