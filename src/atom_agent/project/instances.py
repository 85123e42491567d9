"""Where the project's own tests get an object of a class: one traced run of its suite.

A reproduction test of a method has to build the object first, and how a project makes one is
often nowhere in the class: a parser library's tests may never write ``Node(…)``, they write
``lib.parse("…")[0]``. A small model asked for tests of ``Node.kind_name``
calls the constructor with a string and never reaches the method (sessions 19–24). The tests
that already pass know the way: this runs them once with a pytest plugin that profiles each
test (``sys.setprofile``, from its setup on) and records the lines of test code (a test file
or a ``conftest.py``) that get an object of the class: a constructor they call, or a
function they call that returns one, or a list or tuple holding one. Those lines go into the
request for reproduction tests (SWE-agent's lesson: what the agent is shown of the project
matters more than the prompt).

The run stops once :data:`MAX_ORIGINS` distinct lines are seen; it never changes the project
(the plugin lives in the run's scratch folder) and its failures only mean no lines.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from atom_agent.project.suite import Plugin, run_suite
from atom_agent.project.suite_command import TestCommand
from atom_agent.sandbox.base import Limits, SandboxRunner

logger = logging.getLogger(__name__)

MAX_ORIGINS = 4
"""Lines shown (distinct by text, at most two from one test file)."""
MAX_BASELINE_SECONDS = 60.0
"""The traced run is made only for a project whose baseline suite took at most this long (it
stops early once the lines are seen, but a class no test makes costs a whole run)."""

PLUGIN = r"""
# atom_agent: records where test code gets objects of one class (the project is not changed).
import importlib
import json
import os
import sys

import pytest

_OUT = os.environ.get("ATOM_PLUGIN_OUT", "")
_MODULE = os.environ.get("ATOM_INSTANCE_MODULE", "")
_CLASS = os.environ.get("ATOM_INSTANCE_CLASS", "")
_LIMIT = int(os.environ.get("ATOM_INSTANCE_LIMIT", "4"))
_ROOT = os.getcwd()
_found = []
_session = []
_cls = []
_is_test_file = {}


def _is_test(path):
    known = _is_test_file.get(path)
    if known is None:
        name = os.path.basename(path)
        known = name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
        _is_test_file[path] = known
    return known


def _holds(value, cls):
    if isinstance(value, cls):
        return True
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, cls) for v in value[:3])
    return False


def _record(frame):
    path = os.path.relpath(frame.f_code.co_filename, _ROOT)
    try:
        with open(frame.f_code.co_filename, encoding="utf-8", errors="replace") as source:
            text = source.read().splitlines()[frame.f_lineno - 1].strip()
    except (OSError, IndexError):
        return
    if any(f["text"] == text for f in _found) or sum(f["path"] == path for f in _found) >= 2:
        return
    _found.append({"path": path, "line": frame.f_lineno, "text": text[:200]})
    with open(_OUT, "w", encoding="utf-8") as out:
        json.dump(_found, out)
    if len(_found) >= _LIMIT:
        sys.setprofile(None)
        if _session:
            _session[0].shouldstop = "atom_agent: enough objects seen"


def _profile(frame, event, arg):
    # A test line gets an object: a constructor it calls starts, or a function it calls
    # returns one (or a list or tuple holding one: `lib.parse(text)[0]`).
    if event == "call":
        if frame.f_code.co_name != "__init__":
            return
        back = frame.f_back
        if back is None or not _is_test(back.f_code.co_filename):
            return
        if not isinstance(frame.f_locals.get("self"), _cls[0]):
            return
    elif event == "return":
        back = frame.f_back
        if arg is None or back is None or not _is_test(back.f_code.co_filename):
            return
        if _is_test(frame.f_code.co_filename) or not _holds(arg, _cls[0]):
            return
        if frame.f_locals.get("self") is arg:  # `iter(obj)`: the test had it already
            return
    else:
        return
    try:
        _record(back)
    except Exception:
        pass


def pytest_sessionstart(session):
    _session.append(session)
    try:
        cls = importlib.import_module(_MODULE)
        for part in _CLASS.split("."):
            cls = getattr(cls, part)
    except Exception:
        return
    if isinstance(cls, type):
        _cls.append(cls)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # From setup on: a fixture that builds the object is where the project's tests get it.
    if _cls and len(_found) < _LIMIT:
        sys.setprofile(_profile)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    sys.setprofile(None)
"""
"""The plugin's source: stdlib only, it runs under the project's pytest in the sandbox."""


def instance_origins(
    root: Path,
    command: TestCommand,
    module: str,
    class_qualname: str,
    *,
    runner: SandboxRunner,
    limits: Limits,
) -> list[str]:
    """Lines of the project's tests where objects of `module`.`class_qualname` are made.

    Each as ``path:line: text``, in the order the suite met them; [] when the class cannot be
    imported, is never made by a test, or the run failed.
    """
    plugin = Plugin(
        name="atom_instance_origins",
        source=PLUGIN,
        env={
            "ATOM_INSTANCE_MODULE": module,
            "ATOM_INSTANCE_CLASS": class_qualname,
            "ATOM_INSTANCE_LIMIT": str(MAX_ORIGINS),
        },
    )
    result = run_suite(root, command, runner=runner, limits=limits, plugin=plugin)
    try:
        found = json.loads(result.plugin_output) if result.plugin_output.strip() else []
    except json.JSONDecodeError:
        logger.warning("the instance tracer wrote no readable record")
        return []
    return [
        f"{f['path']}:{f['line']}: {f['text']}"
        for f in found
        if isinstance(f, dict) and {"path", "line", "text"} <= f.keys()
    ][:MAX_ORIGINS]
