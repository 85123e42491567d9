"""The project's dependencies in the sandbox: what it declares, and which of it is installed.

Code under test imports the project's dependencies. The sandbox shows the interpreter's
site-packages cut down to what a run needs (pytest, hypothesis); a project adds the
distributions it declares (``[project] dependencies`` and test extras in pyproject.toml,
``install_requires`` / ``tests_require`` in setup.cfg, ``requirements*.txt``) that this
interpreter has installed, read-only. What it declares and is not installed is reported, not
installed: network stays off.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_TEST_EXTRAS = ("test", "tests", "testing", "dev")


@dataclass(frozen=True)
class Dependencies:
    """What the project declares: installed here (bound into the sandbox) and missing."""

    installed: tuple[str, ...]
    missing: tuple[str, ...]


def _names(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith(("-", "git+", "http")):
            continue  # options (-r, -e), URLs
        found = _NAME.match(line)
        if found:
            out.append(found.group(1))
    return out


def declared(root: Path) -> list[str]:
    """Distribution names the project at `root` declares it needs (tests included)."""
    names: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
        except tomllib.TOMLDecodeError:
            data = {}
        project = data.get("project") or {}
        names += _names([str(d) for d in project.get("dependencies") or []])
        extras = project.get("optional-dependencies") or {}
        for extra in _TEST_EXTRAS:
            names += _names([str(d) for d in extras.get(extra) or []])
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(setup_cfg, encoding="utf-8")
        except configparser.Error:
            parser = configparser.ConfigParser()
        for key in ("install_requires", "tests_require"):
            names += _names(parser.get("options", key, fallback="").splitlines())
    for req in sorted(root.glob("requirements*.txt")):
        names += _names(req.read_text(encoding="utf-8", errors="replace").splitlines())
    return list(dict.fromkeys(names))


def dependencies(root: Path) -> Dependencies:
    """The project's declared distributions, split into installed here and missing."""
    installed, missing = [], []
    for name in declared(root):
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
        else:
            installed.append(name)
    return Dependencies(tuple(installed), tuple(missing))
