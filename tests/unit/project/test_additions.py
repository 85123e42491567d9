"""Definitions a task asks to add: found by what the task writes as calls, placed in its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.project.additions import new_definitions, placement
from atom_agent.project.repomap import scan

WORDS = '''\
"""Word helpers."""

from collections import Counter


def word_count(text):
    """How many words `text` has."""
    return len(text.split())


def sort_words(words, key=None):
    """The words in order."""
    return sorted(words, key=key)


class Shelf:
    """Books on a shelf."""

    def __init__(self):
        self.books = []

    def add(self, title):
        self.books.append(title)
'''


def _project(root: Path) -> Path:
    (root / "textkit").mkdir(parents=True)
    (root / "textkit" / "words.py").write_text(WORDS)
    (root / "tests").mkdir()
    (root / "tests" / "test_words.py").write_text("def test_it():\n    assert True\n")
    return root


def _new(root: Path, task: str) -> list[tuple[str, str, str, str]]:
    found = new_definitions(task, scan(root), root)
    assert all(d.new and d.lineno == 0 for d in found)
    return [(d.path, d.qualname, d.kind, d.signature) for d in found]


def test_a_function_the_task_names_in_a_file_it_names_is_new(tmp_path: Path) -> None:
    root = _project(tmp_path)
    task = "Add a function longest_word(text) to textkit/words.py; longest_word('a bb') is 'bb'."
    assert _new(root, task) == [
        ("textkit/words.py", "longest_word", "function", "def longest_word(text)")
    ]


def test_a_method_of_a_class_the_project_has_is_new(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _new(root, "Give the shelf a `Shelf.remove(title)` that takes a book off it.") == [
        ("textkit/words.py", "Shelf.remove", "method", "def remove(self, title)")
    ]


def test_a_signature_the_task_never_states_is_left_unknown(tmp_path: Path) -> None:
    root = _project(tmp_path)
    task = "In textkit/words.py, make vowels('queue') return 4."
    assert _new(root, task) == [("textkit/words.py", "vowels", "function", "")]


@pytest.mark.parametrize(
    "task",
    [
        "Make word_count(text) in textkit/words.py ignore punctuation.",  # exists
        "Add longest_word(text) that returns the longest word.",  # no file named
        "Add longest_word(text) to tests/test_words.py.",  # a test file
        "Add longest_word(text) to textkit/missing.py.",  # no such file
        "In textkit/words.py, word_count should use len(text.split()) and sorted(x).",  # builtins
        "In textkit/words.py, count with Counter(words) in word_count.",  # imported there
        "In textkit/words.py, sort_words should call key(w) once per word.",  # a parameter
        "Add re.sub(x) handling to textkit/words.py.",  # a module's function
        "Add Crate.open(self) to textkit/words.py.",  # no such class
    ],
)
def test_names_that_are_not_new_definitions(tmp_path: Path, task: str) -> None:
    root = _project(tmp_path)
    assert _new(root, task) == []


def test_a_parameter_of_a_new_function_is_not_another_new_one(tmp_path: Path) -> None:
    root = _project(tmp_path)
    task = "Add apply_all(fn, xs) to textkit/words.py: it returns [fn(x) for x in xs]."
    assert [q for _, q, _, _ in _new(root, task)] == ["apply_all"]


def test_the_file_a_new_definition_goes_in_is_shown_numbered_or_as_its_outline(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    shown = placement(root, "textkit/words.py", budget_tokens=2000)
    assert "    6| def word_count(text):" in shown and "Counter" in shown
    outline = placement(root, "textkit/words.py", budget_tokens=20)
    assert "def word_count(text)" in outline and "|" not in outline
