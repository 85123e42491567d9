"""No process-wide cache of services, graphs, stores or models: what a run uses is in Resources.

Module-level mutable containers and memoised functions are found by reading the source. The
few that remain are pure memos of machine facts or of a pure function, listed here with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import atom_agent

SRC = Path(atom_agent.__file__).parent
CONTAINERS = {"dict", "OrderedDict", "defaultdict", "set", "list", "WeakValueDictionary",
              "WeakKeyDictionary"}  # fmt: skip
ALLOWED = {
    # tool → OpenAI schema: a pure function of the tool's name, description and argument model
    ("models/tool_schemas.py", "_CACHE"),
    # the built-in prompt texts, registered by their modules at import: constants, never a run's
    ("prompts.py", "_DEFAULTS"),
    # what this machine's kernel and binaries can do (probed once; they do not change)
    ("sandbox/bubblewrap.py", "probe_bubblewrap"),
    ("sandbox/bubblewrap.py", "_python_binds"),  # the interpreter's and pytest's install paths
    ("sandbox/bubblewrap.py", "pytest_plugins"),  # the installed distributions' pytest plugins
    ("sandbox/cgroups.py", "probe_cgroups"),
    ("sandbox/subprocess_runner.py", "probe_isolation"),
}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def process_caches(source: str) -> list[str]:
    """Module-level empty containers and memoised functions of one module, by name."""
    found: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            empty_literal = isinstance(value, ast.Dict | ast.Set | ast.List) and not (
                value.keys if isinstance(value, ast.Dict) else value.elts
            )
            call = isinstance(value, ast.Call) and _name(value) in CONTAINERS and not value.args
            if empty_literal or call:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [_name(t) for t in targets]
        if isinstance(node, ast.FunctionDef) and any(
            _name(d) in ("cache", "lru_cache") for d in node.decorator_list
        ):
            found.append(node.name)
    return found


def test_no_module_level_cache_remains_but_the_listed_pure_memos() -> None:
    found = {
        (path.relative_to(SRC).as_posix(), name)
        for path in SRC.rglob("*.py")
        for name in process_caches(path.read_text(encoding="utf-8"))
    }
    assert found - ALLOWED == set()


def test_the_scan_finds_each_kind_of_cache() -> None:
    source = (
        "import functools\nfrom collections import OrderedDict\n"
        "_A = {}\n_B: dict[str, int] = {}\n_C = OrderedDict()\nTABLE = {'x': 1}\n"
        "@functools.cache\ndef d(): ...\n@functools.lru_cache(maxsize=4)\ndef e(): ...\n"
    )
    assert process_caches(source) == ["_A", "_B", "_C", "d", "e"]
