"""How a project's tests are run: its pytest command, from the user, its config or its folders."""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.errors import ConfigError
from atom_agent.project.repomap import python_files

_NO_CACHE = ["-p", "no:cacheprovider"]
# The sandbox's pytest is not the one the project pins: its deprecation warnings are about the
# project's use of pytest, not its code, yet `filterwarnings = error` makes them collection errors
# (one project's suite did not collect under pytest 9 without this). Command-line -W wins over
# the ini.
_PYTEST_DEPRECATIONS = ["-W", "ignore::pytest.PytestDeprecationWarning"]
# Options of plugins the sandbox does not have (bubblewrap shows it only pytest and hypothesis),
# with how many values each takes ("?" = one, when the next token is not an option). Coverage
# would also write .coverage files into the project's checkout.
_PLUGIN_OPTIONS: dict[str, int | str] = {
    "--cov": "?",
    "--cov-report": 1,
    "--cov-config": 1,
    "--cov-fail-under": 1,
    "--cov-context": 1,
    "--cov-append": 0,
    "--cov-branch": 0,
    "--no-cov": 0,
    "--no-cov-on-fail": 0,
    "-n": 1,
    "--numprocesses": 1,
    "--maxprocesses": 1,
    "--dist": 1,
    "--reruns": 1,
    "--reruns-delay": 1,
    "--timeout": 1,
}
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")


@dataclass(frozen=True)
class TestCommand:
    """How a project's tests run: a pytest command line and where its code imports from.

    Attributes:
        argv: the whole command, e.g. ``[python, "-m", "pytest", "-q", "-p",
            "no:cacheprovider", "-W", "ignore::pytest.PytestDeprecationWarning", "tests"]``;
            it ends with `targets`.
        python_path: directories put on ``PYTHONPATH``, relative to the project root
            (``["."]``, or ``["src"]`` for a src/ layout).
        source: why this command: ``"pyproject.toml [tool.pytest.ini_options] testpaths"``,
            ``"tests/ folder"``, ``"given"`` …
        targets: the paths at the end of `argv` that pytest collects by default (empty: pytest
            decides from its config); :func:`run_suite` replaces them when asked for
            single tests.
    """

    __test__ = False  # not a pytest test class, despite the name

    argv: list[str]
    python_path: list[str]
    source: str
    targets: list[str] = field(default_factory=list)


def detect(root: Path, *, python: str, given: str = "") -> TestCommand:
    """The command that runs the tests of the project at `root`.

    Args:
        root: the project's root folder.
        python: the interpreter as the sandbox sees it (the runner's ``python``).
        given: the user's test command (``"PYTHONPATH=src pytest -x tests"``), if any; a
            leading ``PYTHONPATH=…`` becomes the python path, ``python``/``pytest`` become
            ``python -m pytest``.

    Returns:
        The given command; else one from the project's pytest configuration (pytest.ini,
        pyproject.toml, tox.ini, setup.cfg); else one collecting the test folders and files
        found. ``-p no:cacheprovider`` is always added (no cache written into the project),
        and so is ``-W ignore::pytest.PytestDeprecationWarning`` (see ``_PYTEST_DEPRECATIONS``).

    Raises:
        ConfigError: the given command is not a pytest command, or nothing looks like tests.
    """
    root = Path(root)
    python_path = ["src"] if _src_layout(root) else ["."]
    if given.strip():
        return _from_given(root, python, given, python_path)
    base = [python, "-m", "pytest", "-q", *_NO_CACHE, *_PYTEST_DEPRECATIONS]
    config = _pytest_config(root)
    if config is not None:
        where, options = config
        addopts = _plugin_free_addopts(options.get("addopts"))
        if addopts is not None:
            base += ["-o", f"addopts={shlex.join(addopts)}"]
        testpaths = _expand(root, _words(options.get("testpaths")))
        if testpaths:
            return TestCommand([*base, *testpaths], python_path, f"{where} testpaths", testpaths)
    targets, found = _test_locations(root)
    if not targets:
        raise ConfigError(
            f"no tests found in {root} (no pytest testpaths, no tests/ or test/ folder, no "
            "test_*.py files): pass the command that runs them with --test-command"
        )
    source = found if config is None else f"{config[0]}; {found}"
    return TestCommand([*base, *targets], python_path, source, targets)


def _from_given(root: Path, python: str, given: str, python_path: list[str]) -> TestCommand:
    try:
        words = shlex.split(given)
    except ValueError as exc:
        raise ConfigError(f"--test-command {given!r}: {exc}") from exc
    while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        if name != "PYTHONPATH":
            raise ConfigError(
                f"--test-command: only PYTHONPATH=… may precede the command, not {name}="
            )
        python_path = [p for p in value.split(":") if p] or ["."]
    program = Path(words[0]).name if words else ""
    if program in ("pytest", "py.test"):
        rest = words[1:]
    elif _PYTHON.match(program) and words[1:3] == ["-m", "pytest"]:
        rest = words[3:]
    else:
        raise ConfigError(
            f"--test-command {given!r}: must run pytest (`pytest …` or `python -m pytest …`); "
            "the suite's results are read from pytest's junit report"
        )
    if "no:cacheprovider" not in rest:
        rest = [*_NO_CACHE, *rest]
    if _PYTEST_DEPRECATIONS[1] not in rest:
        rest = [*_PYTEST_DEPRECATIONS, *rest]
    targets: list[str] = []
    for word in reversed(rest):  # trailing words naming paths of the project are its targets
        if word.startswith("-") or not (root / word.split("::")[0]).exists():
            break
        targets.insert(0, word)
    return TestCommand([python, "-m", "pytest", *rest], python_path, "given", targets)


def _src_layout(root: Path) -> bool:
    src = root / "src"
    return src.is_dir() and any(p.is_file() for p in src.glob("*/__init__.py"))


def _pytest_config(root: Path) -> tuple[str, dict[str, Any]] | None:
    """The pytest settings pytest itself would read at `root`, in its order, and where from."""
    for name in ("pytest.ini", ".pytest.ini"):
        if (root / name).is_file():  # pytest uses these even without a [pytest] section
            return f"{name} [pytest]", _ini_section(root / name, "pytest") or {}
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{pyproject}: unreadable ({exc})") from exc
        pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
        if isinstance(pytest_table, dict):
            ini_options = pytest_table.get("ini_options")
            if isinstance(ini_options, dict):
                return "pyproject.toml [tool.pytest.ini_options]", ini_options
            return "pyproject.toml [tool.pytest]", pytest_table  # pytest ≥ 9's native table
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        options = _ini_section(root / name, section) if (root / name).is_file() else None
        if options is not None:
            return f"{name} [{section}]", options
    return None


def _ini_section(path: Path, section: str) -> dict[str, Any] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from exc
    return dict(parser[section]) if parser.has_section(section) else None


def _words(value: Any) -> list[str]:
    """An ini value (``"a b"``, a TOML list or string) as a list of words."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return shlex.split(str(value))


def _expand(root: Path, patterns: list[str]) -> list[str]:
    """Testpaths that exist, globs expanded (pytest ≥ 7 allows globs in testpaths)."""
    found: list[str] = []
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            found += sorted(p.relative_to(root).as_posix() for p in root.glob(pattern))
        elif (root / pattern).exists():
            found.append(pattern)
    return found


def _plugin_free_addopts(value: Any) -> list[str] | None:
    """The config's addopts without options of plugins the sandbox lacks; None: keep as is."""
    words = _words(value)
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        takes = _PLUGIN_OPTIONS.get(word.split("=", 1)[0])
        if takes is None and not re.fullmatch(r"-n(\d+|auto|logical)", word):
            kept.append(word)
        elif takes and "=" not in word:
            # Its value is the next word (always, or for "?" when that is not an option).
            if index < len(words) and (takes == 1 or not words[index].startswith("-")):
                index += 1
    return kept if len(kept) < len(words) else None


def _test_locations(root: Path) -> tuple[list[str], str]:
    """Default targets when the config names none: test folders, files, or packages' tests."""
    targets: list[str] = []
    why: list[str] = []
    for name in ("tests", "test"):
        if (root / name).is_dir():
            targets.append(name)
            why.append(f"{name}/ folder")
    top = sorted(
        p.name for p in root.glob("*.py") if p.name.startswith("test_") or p.stem.endswith("_test")
    )
    if top:
        targets += top
        why.append("test_*.py at the top level")
    parents = [root, root / "src"]
    for package in sorted(p.parent for base in parents for p in base.glob("*/__init__.py")):
        tests = [package / "tests", package / "test"]
        if any(t.is_dir() for t in tests):
            # The whole package: tests of its subpackages (pkg/sub/tests) are collected too.
            rel = package.relative_to(root).as_posix()
            targets.append(rel)
            why.append(f"{rel}/tests folder")
    files = python_files(root.resolve())
    if not targets and any(p.name.startswith("test_") or p.stem.endswith("_test") for p in files):
        return ["."], "test files under the root"
    return targets, ", ".join(why)
