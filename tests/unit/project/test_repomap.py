"""The repository map: scanning a project, naming its definitions, outlines and excerpts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atom_agent.project.additions import new_definitions
from atom_agent.project.repomap import Definition, excerpt, find, mentioned, render_map, scan

MOD = '''\
import collections
from functools import reduce

LIMIT = 10
UNUSED = 3


def helper(x):
    """Double x."""
    return x * 2


def update_in(
    d,  # the mapping
    keys,
    func,
    default=None,
    factory=dict,
):
    """Update a value in a nested dictionary.

    Uses `helper`, ``LIMIT`` levels at most; Base cases first.
    """
    raise NotImplementedError


class Base:
    def shared(self):
        return 1


class Cache(Base):
    """A cache with expiring items."""

    maxsize = 128

    class _Link:
        __slots__ = ("key", "next")

    def __init__(self, ttl):
        self.ttl = ttl
        self.items = collections.OrderedDict()

    @property
    def size(self):
        """How many items."""
        return len(self.items)

    def _evict(self, key):
        del self.items[key]

    def get(self, key):
        """Read one item."""
        return self.items[key]

    def expire(self, time=None):
        """Remove expired items.

        Calls self._evict(key) for each.
        """
        ...

    async def fetch(self, key) -> int:
        pass
'''


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "from .mod import Cache, update_in\n\n\ndef top():\n    pass\n",
            "pkg/mod.py": MOD,
            "pkg/util.py": 'PATTERN = "\\d+"\n\n\ndef slice_items(seq):\n    return seq[1:]\n',
            "conftest.py": "def update_in():\n    pass\n",
            "myenv/pyvenv.cfg": "home = /usr/bin\n",
            "myenv/lib/site.py": "def in_myenv(): pass\n",
            "src/lib/core.py": (
                "class Choice:\n    def convert(self, value):\n        return 1\n\n\n"
                "def factory():\n    return {}\n"
            ),
            "broken.py": "def f(:\n",
            "tests/test_mod.py": "def update_in():\n    pass\n\n\ndef test_x():\n    pass\n",
            ".venv/lib/site.py": "def hidden(): pass\n",
            "venv/x.py": "def in_venv(): pass\n",
            "build/lib/pkg/mod.py": "def built(): pass\n",
            "node_modules/a.py": "def js(): pass\n",
            "pkg/__pycache__/mod.py": "def cached(): pass\n",
        },
    )


def by_name(defs: list[Definition]) -> dict[str, Definition]:
    return {f"{d.module}:{d.qualname}": d for d in defs}


def test_scan_records_each_definition(project: Path) -> None:
    defs = by_name(scan(project))
    assert defs["pkg.mod:update_in"] == Definition(
        path="pkg/mod.py",
        module="pkg.mod",
        qualname="update_in",
        kind="function",
        signature="def update_in(d, keys, func, default=None, factory=dict)",
        lineno=13,
        end_lineno=24,
        doc="Update a value in a nested dictionary.",
        stub=True,
        test=False,
    )
    cache = defs["pkg.mod:Cache"]
    assert (cache.kind, cache.signature, cache.doc, cache.stub) == (
        "class",
        "class Cache(Base)",
        "A cache with expiring items.",
        False,
    )
    size = defs["pkg.mod:Cache.size"]
    assert (size.kind, size.lineno, size.signature) == ("method", 44, "def size(self)")
    assert defs["pkg.mod:Cache.expire"].stub and not defs["pkg.mod:Cache.get"].stub
    assert defs["pkg.mod:Cache.fetch"].signature == "async def fetch(self, key) -> int"
    assert defs["pkg.mod:Cache.fetch"].stub
    assert defs["pkg.mod:Cache._Link"].kind == "class"
    assert defs["pkg:top"].path == "pkg/__init__.py"
    assert defs["lib.core:Choice.convert"].path == "src/lib/core.py"


def test_scan_skips_broken_big_hidden_and_generated_files(project: Path) -> None:
    write(project, {"pkg/big.py": "def big(): pass\n" + "#" * 5000 + "\n"})
    names = {d.qualname for d in scan(project, max_bytes=4000)}
    assert {"update_in", "top", "Choice.convert", "test_x"} <= names
    assert not names & {"hidden", "in_venv", "in_myenv", "built", "js", "cached", "big", "f"}
    # Files are read in path order, the top folder's first: broken.py, conftest.py, pkg/….
    assert {d.path for d in scan(project, max_files=3)} == {"conftest.py", "pkg/__init__.py"}


def test_scan_follows_no_symlink_out_of_the_project(project: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {"secret.py": "def secret(): pass\n"})
    (project / "pkg" / "link.py").symlink_to(outside / "secret.py")
    (project / "linked_dir").symlink_to(outside, target_is_directory=True)
    assert "secret" not in {d.qualname for d in scan(project)}


def test_scan_marks_test_files(project: Path) -> None:
    write(project, {"pkg/mod_test.py": "def a(): pass\n", "conftest.py": "def b(): pass\n"})
    marked = {d.qualname: d.test for d in scan(project)}
    assert marked["test_x"] and marked["a"] and marked["b"]
    assert not marked["helper"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("update_in", ["pkg.mod:update_in", "conftest:update_in", "tests.test_mod:update_in"]),
        ("pkg.update_in", ["pkg.mod:update_in"]),  # re-exported
        ("pkg.mod.update_in", ["pkg.mod:update_in"]),
        ("mod.update_in(d, keys, func)", ["pkg.mod:update_in"]),
        ("Cache.expire", ["pkg.mod:Cache.expire"]),
        ("pkg.Cache.expire", ["pkg.mod:Cache.expire"]),  # re-exported by the package
        ("lib.Choice.convert", ["lib.core:Choice.convert"]),
        ("convert", ["lib.core:Choice.convert"]),
        ("self._evict", ["pkg.mod:Cache._evict"]),
        ("other.pkg.mod.helper", ["pkg.mod:helper"]),  # an unknown head is dropped
        ("os.path.join", []),
        ("mod", []),
        ("p[1:4]", []),
    ],
)
def test_find_resolves_names_as_users_write_them(
    project: Path, name: str, expected: list[str]
) -> None:
    assert [f"{d.module}:{d.qualname}" for d in find(scan(project), name)] == expected


def test_find_puts_exact_qualnames_before_suffixes(project: Path) -> None:
    write(project, {"pkg/aa.py": "class Shop:\n    def helper(self): pass\n"})
    assert [d.qualname for d in find(scan(project), "helper")] == ["helper", "Shop.helper"]


def test_mentioned_takes_names_in_order_of_first_mention(project: Path) -> None:
    task = (
        "Implement `pkg.mod.update_in(d, keys, func, default=None, factory=dict)` so that "
        "every dict is made with `factory`; `Cache` and Cache.expire() stay as they are, "
        "and helper(x) too. Use `update_in` again, os.path.join and `test_x`."
    )
    assert [d.qualname for d in mentioned(task, scan(project))] == [
        "update_in",
        "Cache",
        "Cache.expire",
        "helper",
    ]


def test_mentioned_prefers_a_function_to_methods_of_the_same_name(project: Path) -> None:
    write(project, {"pkg/aa.py": "class Shop:\n    def helper(self): pass\n"})
    assert [d.qualname for d in mentioned("Fix `helper`.", scan(project))] == ["helper"]
    assert [d.qualname for d in mentioned("Fix `Shop.helper`.", scan(project))] == ["Shop.helper"]


def test_mentioned_file_narrows_an_ambiguous_name(project: Path) -> None:
    write(project, {"pkg/other.py": "def helper():\n    pass\n"})
    defs = scan(project)
    assert [d.path for d in mentioned("Fix `helper()`.", defs)] == ["pkg/mod.py", "pkg/other.py"]
    assert [d.path for d in mentioned("Fix `helper()` in `pkg/other.py`.", defs)] == [
        "pkg/other.py"
    ]
    assert [d.path for d in mentioned("Fix helper() in other.py.", defs)] == ["pkg/other.py"]


def test_render_map_outlines_files_focus_first(project: Path) -> None:
    defs = scan(project)
    text = render_map(defs, budget_tokens=10_000, focus=["Choice.convert"])
    assert text.splitlines()[:3] == [
        "src/lib/core.py:",
        "  class Choice:",
        "    def convert(self, value)",
    ]
    assert (
        "pkg/mod.py:\n  def helper(x)\n  def update_in(d, keys, func, default=None, factory=dict)\n"
        in text
    )
    assert "  class Cache(Base):\n    class _Link:\n    def __init__(self, ttl)\n" in text
    assert text.splitlines()[-3:] == ["tests/test_mod.py:", "  def update_in()", "  def test_x()"]
    assert text == render_map(list(reversed(defs)), budget_tokens=10_000, focus=["Choice.convert"])


def test_render_map_ranks_files_sharing_words_with_the_focus(project: Path) -> None:
    text = render_map(scan(project), budget_tokens=10_000, focus=["_get_items"])
    paths = [line for line in text.splitlines() if not line.startswith(" ")]
    # Nothing is named _get_items; util.py's slice_items shares "items" with it ("get" is too
    # common a word to count); the others follow by path, tests last.
    assert paths == [
        "pkg/util.py:",
        "pkg/__init__.py:",
        "pkg/mod.py:",
        "src/lib/core.py:",
        "conftest.py:",
        "tests/test_mod.py:",
    ]


def test_render_map_stops_whole_files_at_the_budget(project: Path) -> None:
    defs = scan(project)
    text = render_map(defs, budget_tokens=40, focus=["slice_items"])
    assert text == (
        "pkg/util.py:\n  def slice_items(seq)\npkg/__init__.py:\n  def top()\n… 4 more files"
    )
    assert len(text) // 4 <= 40


def test_render_map_cuts_a_first_file_too_big_alone(project: Path) -> None:
    text = render_map(scan(project), budget_tokens=30, focus=["Cache.expire"])
    assert text.splitlines()[0] == "pkg/mod.py:"
    assert "  class Cache(Base):" in text and "    def expire(self, time=None)" in text
    assert "more definitions" in text and text.endswith("… 5 more files")
    assert "def helper(x)" not in text


FUNCTION_EXCERPT = '''\
    1| import collections
    2| from functools import reduce
    ⋮|
    4| LIMIT = 10
    ⋮|
    8| def helper(x):
    9|     """Double x."""
   10|     return x * 2
    ⋮|
   13| def update_in(
   14|     d,  # the mapping
   15|     keys,
   16|     func,
   17|     default=None,
   18|     factory=dict,
   19| ):
   20|     """Update a value in a nested dictionary.
   21|
   22|     Uses `helper`, ``LIMIT`` levels at most; Base cases first.
   23|     """
   24|     raise NotImplementedError'''

METHOD_TARGET = '''\
   56|     def expire(self, time=None):
   57|         """Remove expired items.
   58|
   59|         Calls self._evict(key) for each.
   60|         """
   61|         ...'''


def definition(root: Path, qualname: str) -> Definition:
    return next(d for d in scan(root) if d.qualname == qualname and not d.test)


def test_excerpt_of_a_function_brings_imports_and_the_names_it_mentions(project: Path) -> None:
    # UNUSED is a constant the function never names: left out.
    text = excerpt(project, definition(project, "update_in"), budget_tokens=10_000)
    assert text == FUNCTION_EXCERPT


def test_excerpt_of_a_method_brings_its_class_most_important_first(project: Path) -> None:
    expire = definition(project, "Cache.expire")
    # Tight: the class header and docstring, class assignments, __init__ in full; no room for
    # _evict in full (called as self._evict), so its signature; no other method, no import.
    assert excerpt(project, expire, budget_tokens=120) == (
        "   32| class Cache(Base):\n"
        '   33|     """A cache with expiring items."""\n'
        "    ⋮|\n"
        "   35|     maxsize = 128\n"
        "    ⋮|\n"
        "   40|     def __init__(self, ttl):\n"
        "   41|         self.ttl = ttl\n"
        "   42|         self.items = collections.OrderedDict()\n"
        "    ⋮|\n"
        "   49|     def _evict(self, key):\n"
        "    ⋮|\n" + METHOD_TARGET
    )
    # A little more room: _evict in full, before the nested class and the other signatures.
    more = excerpt(project, expire, budget_tokens=125)
    assert "   50|         del self.items[key]" in more
    assert "_Link" not in more and "def size" not in more
    roomy = excerpt(project, expire, budget_tokens=10_000)
    for line in [
        "    1| import collections",
        "   27| class Base:",  # the base class's methods are `self`'s too
        "   28|     def shared(self):",
        "   37|     class _Link:",
        "   44|     @property",
        "   47|         return len(self.items)",
        "   50|         del self.items[key]",
        "   63|     async def fetch(self, key) -> int:",
        METHOD_TARGET,
    ]:
        assert line in roomy
    assert "LIMIT" not in roomy and "def helper" not in roomy


def test_excerpt_never_cuts_the_target(project: Path) -> None:
    expire = definition(project, "Cache.expire")
    assert excerpt(project, expire, budget_tokens=5) == METHOD_TARGET
    assert (
        excerpt(project, definition(project, "update_in"), budget_tokens=5)
        == (FUNCTION_EXCERPT[FUNCTION_EXCERPT.index("   13| def update_in(") :])
    )


REPOTASKS = Path("/work/repotasks")


def _repotasks() -> list[dict[str, str]]:
    listing = REPOTASKS / "tasks.jsonl"
    if not listing.is_file():
        return []
    return [json.loads(line) for line in listing.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not _repotasks(), reason="the prepared repotasks are not on this machine")
@pytest.mark.parametrize("task", _repotasks(), ids=lambda task: task["id"])
def test_mentioned_finds_the_target_of_real_project_tasks(task: dict[str, str]) -> None:
    target = json.loads((REPOTASKS / task["id"] / "task.json").read_text())["target"]
    defs = scan(REPOTASKS / task["repo"])
    found = [(d.path, d.qualname) for d in mentioned(task["task"], defs)]
    assert (target["file"], target["qualname"]) in found
    # Nothing the task writes as a call is taken for a definition to add.
    assert new_definitions(task["task"], defs, REPOTASKS / task["repo"]) == []


def test_excerpt_of_a_method_shows_the_same_method_of_another_class(tmp_path: Path) -> None:
    (tmp_path / "caches.py").write_text(
        "class Timed:\n"
        "    def expire(self, time=None):\n"
        '        """Remove expired items."""\n'
        "        raise NotImplementedError\n"
        "\n\n"
        "class Stub:\n"
        "    def expire(self, time=None):\n"
        "        pass\n"
        "\n\n"
        "class Heap:\n"
        "    def expire(self, time=None):\n"
        '        """Remove expired items."""\n'
        "        while self.order and self.order[0] <= time:\n"
        "            self.order.pop(0)\n"
        "\n"
        "    def other(self):\n"
        "        return 1\n"
    )
    text = excerpt(tmp_path, definition(tmp_path, "Timed.expire"), budget_tokens=10_000)
    # How the project does the same job elsewhere: Heap.expire in full, under its class line;
    # a stub of the same name shows nothing, nor do Heap's other methods.
    assert "   12| class Heap:" in text
    assert "   15|         while self.order and self.order[0] <= time:" in text
    assert "class Stub" not in text and "def other" not in text


def test_an_analogue_built_on_private_attributes_the_class_lacks_is_not_shown(
    tmp_path: Path,
) -> None:
    (tmp_path / "caches.py").write_text(
        "class Linked:\n"
        "    def __init__(self):\n"
        "        self.__root = None\n"
        "\n"
        "    def expire(self, time=None):\n"
        "        raise NotImplementedError\n"
        "\n\n"
        "class Heap:\n"
        "    def expire(self, time=None):\n"
        "        while self.__order and self.__order[0] <= time:\n"
        "            self.__order.pop(0)\n"
    )
    text = excerpt(tmp_path, definition(tmp_path, "Linked.expire"), budget_tokens=10_000)
    # Heap's self.__order is _Heap__order: copied into Linked it raises AttributeError.
    assert "class Heap" not in text and "__order" not in text


def test_excerpt_of_a_stub_shows_the_code_that_calls_it(tmp_path: Path) -> None:
    (tmp_path / "fmt.py").write_text(
        "def _segment(align, width):\n"
        '    """One segment of the rule."""\n'
        "    raise NotImplementedError\n"
        "\n\n"
        "def _rule(widths, aligns):\n"
        "    segments = [_segment(a, w) for a, w in zip(aligns, widths)]\n"
        '    return "|" + "|".join(segments) + "|"\n'
        "\n\n"
        "def unrelated():\n"
        "    return 1\n"
    )
    text = excerpt(tmp_path, definition(tmp_path, "_segment"), budget_tokens=10_000)
    # What the stub's result is used for: its caller in full; code that does not call it, not.
    assert "    7|     segments = [_segment(a, w) for a, w in zip(aligns, widths)]" in text
    assert "def unrelated" not in text
