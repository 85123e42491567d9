"""The relevance gate: a recalled memory enters a step's prompt only for a reason it can name.

Recall ranks by similarity (BM25 + vectors), so something always comes back, related or not:
a class task once had another task's committed interface recalled into its prompt. The gate
asks what the memory shares with the step, in this order:

- **name**: an identifier the step defines, or that the task or step names (``hex_decode``,
  ``Polygon``), occurs as a whole word in the memory's content;
- **file**: a file the step writes or reads (its expected files, files the task or step names)
  occurs in the memory's content; ``impl.py`` and ``test.py`` do not count, every step has them;
- **purpose**: the memory and the step's title and description have at least
  ``min(2, n)`` significant words in common (stems), ``n`` being the number of significant
  words of the step. Significant: 4 letters or more, not a stop word of English or of this
  agent's boilerplate ("step", "implement", "test", "function", "list", …). A count, not a
  Jaccard ratio: a step's title and description are ten to thirty words and a memory may be
  three hundred, so a ratio punishes long memories for their length, not for their topic. Two
  words, because one shared word is what similarity search always finds ("parser", "cache");
  ``min(2, n)`` because a terse step ("Step adder: implement adder.") cannot share two.

Who may pass how:

- an **interface memory** (the committed interface of a step, see
  ``memory/learning.py record_interface``) passes only on a shared name: sharing words with
  another task's code is exactly how the wrong recall happened;
- a memory that names code of its own (identifiers) passes on a name or a file: it is about
  that code;
- a general ``lesson_learned`` or ``convention`` (no identifier at all) may also pass on
  purpose alone, having no name to share.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from atom_agent.memory.records import MemoryRecord

INTERFACE_TAG = "interface of step "
"""Rationale prefix of an interface memory; the defined names follow ``names:``."""

GENERIC_FILES = frozenset({"impl.py", "test.py", "__init__.py"})
"""File names every step has: sharing one says nothing."""

PURPOSE_TYPES = frozenset({"lesson_learned", "convention"})
"""Memory types that may pass on a shared purpose alone (when they name no identifier)."""

MIN_SHARED_WORDS = 2
"""Significant words a memory must share with the step's title and description (see above)."""

_STOP_WORDS = frozenset(
    """
    about above after again against also always another any anything because been before being
    below between both cannot could does doing done down during each either else elsewhere
    enough even ever every first following from further have having here however into itself
    just last least like made make makes many might more most much must need needs never next
    none nothing once only other others otherwise over same second several shall should since
    some such than that their them then there these they thing things this those though three
    through together under unless until upon very want well were what whatever when where
    whether which while will with within without would your yours
    step steps implement implements implemented implementation function functions method
    methods class classes code test tests tested testing write writes written module modules
    file files value values result results return returns returned input inputs output outputs
    string strings list lists number numbers integer integers dict dictionary tuple object
    objects array boolean true false python example examples given give gives take takes
    handle handles support supports correct correctly work works build create creates using
    used uses call calls called case cases check checks pass passes passed fail fails failed
    error errors raise raises should expected expect new simple small basic
    """.split()
)
_SUFFIXES = (
    "ations",
    "ation",
    "ings",
    "ing",
    "ions",
    "ion",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "s",
    "e",
)
_WORD = re.compile(r"[A-Za-z]+")
_BUILTINS = frozenset(dir(builtins)) | frozenset(keyword.kwlist)
# Identifiers as prose writes them: a call `name(`, snake_case, camelCase / PascalCase with an
# inner capital, a name in backticks, and a capitalised word next to "class" ("a Matrix class").
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_SNAKE = re.compile(r"\b([A-Za-z]\w*_\w*[A-Za-z0-9])\b")
_CAMEL = re.compile(r"\b([A-Za-z][a-z0-9]+[A-Z]\w*|[A-Z]{2,}[a-z]\w*)\b")
_TICKED = re.compile(r"`([A-Za-z_]\w*)")
# "The class" starts a sentence; "a Matrix class" names one, so a lowercase word must precede.
_CLASS = re.compile(r"\bclass\s+([A-Z]\w+)|(?<=[a-z] )([A-Z]\w+)\s+class\b")
_FILE = re.compile(r"(?<![\w/.])((?:[\w-]+/)*[A-Za-z_][\w-]*\.[A-Za-z][A-Za-z0-9]{0,4})\b")
_FILE_EXTENSIONS = frozenset(
    "py pyi txt md json toml yaml yml cfg ini csv tsv sql html css js ts rs go c h cpp sh".split()
)


@dataclass(frozen=True)
class Reason:
    """Why a recalled memory belongs in a step's prompt: what it shares with the step."""

    kind: Literal["name", "file", "purpose"]
    """What is shared: a defined or named identifier, a file, or enough significant words."""
    shared: tuple[str, ...]
    """The shared names, files or words (sorted)."""

    def __str__(self) -> str:
        """``shares name hex_decode`` / ``shares file codec.py`` / ``shares purpose: …``."""
        if self.kind == "purpose":
            return "shares purpose: " + ", ".join(self.shared)
        return f"shares {self.kind} " + ", ".join(self.shared)


@dataclass(frozen=True)
class StepFocus:
    """What a step is about, as the gate compares it: names, files and purpose words."""

    names: frozenset[str]
    """Identifiers the step defines, and those the task, title or description name."""
    files: frozenset[str]
    """Files the step writes or reads (generic ones left out), as written and by base name."""
    words: frozenset[str]
    """Stems of the significant words of the step's title and description."""
    spelled: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Each stem of `words` as the step first spells it (for reasons a reader can read)."""

    @classmethod
    def of(
        cls,
        *,
        task: str,
        title: str,
        description: str,
        defines: Iterable[str] = (),
        files: Iterable[str] = (),
    ) -> StepFocus:
        """The focus of a step from its task text, title, description, names and files."""
        prose = f"{task}\n{title}\n{description}"
        named = {n for n in identifiers(prose) if len(n) >= 3}
        paths = {*files, *file_names(prose)}
        wanted: set[str] = set()
        for path in paths:
            base = path.rsplit("/", 1)[-1]
            if base not in GENERIC_FILES:
                wanted |= {path, base}
            elif "/" in path:  # deps/rle/impl.py names one step's file; impl.py names them all
                wanted.add(path)
        spelled = purpose_words(f"{title}\n{description}")
        return cls(
            names=frozenset({*(d for d in defines if d), *named}),
            files=frozenset(wanted),
            words=frozenset(spelled),
            spelled=spelled,
        )


def relevance(focus: StepFocus, record: MemoryRecord) -> Reason | None:
    """Why `record` belongs in the prompt of the step `focus` describes, or None if it does not.

    See the module docstring for the rules; the first reason found is returned (name, then
    file, then purpose).
    """
    content = record.content
    names = sorted(n for n in focus.names if _whole_word(n).search(content))
    if names:
        return Reason("name", tuple(names))
    if is_interface(record):
        return None
    files = sorted(f for f in focus.files if _whole_path(f).search(content))
    if files:
        return Reason("file", tuple(files))
    if str(record.type) not in PURPOSE_TYPES or identifiers(content):
        return None
    shared = focus.words & purpose_words(content).keys()
    if focus.words and len(shared) >= min(MIN_SHARED_WORDS, len(focus.words)):
        return Reason("purpose", tuple(sorted(focus.spelled.get(w, w) for w in shared)))
    return None


def is_interface(record: MemoryRecord) -> bool:
    """Whether `record` is the committed interface of a step (``record_interface``)."""
    return (record.rationale or "").startswith(INTERFACE_TAG)


def identifiers(text: str) -> set[str]:
    """The code identifiers `text` names (calls, snake_case, CamelCase, backticks, classes).

    Python builtins and keywords are left out: ``len(`` names no one's code.
    """
    found: set[str] = set()
    for pattern in (_CALL, _SNAKE, _CAMEL, _TICKED):
        found.update(m.group(1) for m in pattern.finditer(text))
    for m in _CLASS.finditer(text):
        found.add(m.group(1) or m.group(2))
    return {n for n in found if n not in _BUILTINS and not n.startswith("__")}


def file_names(text: str) -> set[str]:
    """Paths and file names `text` mentions (``codec.py``, ``src/app/cli.py``)."""
    return {
        m.group(1)
        for m in _FILE.finditer(text)
        if m.group(1).rsplit(".", 1)[1].lower() in _FILE_EXTENSIONS
    }


def purpose_words(text: str) -> dict[str, str]:
    """The significant words of `text` (4+ letters, not stop words): stem → first spelling."""
    out: dict[str, str] = {}
    for raw in _WORD.findall(text):
        word = raw.lower()
        if len(word) < 4 or word in _STOP_WORDS:
            continue
        stem = _stem(word)
        if stem not in _STOP_WORDS:
            out.setdefault(stem, word)
    return out


def _stem(word: str) -> str:
    # A crude suffix strip, enough to meet "evict" and "eviction", "parse" and "parser".
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _whole_word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


def _whole_path(path: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w/.-])" + re.escape(path) + r"(?![\w-])")


def recalled_entries(ids: Iterable[str], reasons: Mapping[str, str]) -> list[dict[str, str]]:
    """A verdict's ``memories_recalled``: ``{"id", "why"}`` for each memory in the prompt."""
    return [{"id": memory_id, "why": reasons.get(memory_id, "")} for memory_id in ids]


def read_recalled(entries: Iterable[object]) -> list[tuple[str, str]]:
    """``(id, why)`` of a verdict's ``memories_recalled``; older verdicts hold bare ids."""
    out: list[tuple[str, str]] = []
    for entry in entries:
        if isinstance(entry, str):
            out.append((entry, ""))
        elif isinstance(entry, Mapping) and entry.get("id"):
            out.append((str(entry["id"]), str(entry.get("why") or "")))
    return out
