"""A tiny git project and a scripted model that edits it: what the project-mode tests share."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from langchain_core.messages import BaseMessage

from atom_agent import Context
from atom_agent.models.purpose import CallInfo
from atom_agent.testing import ScriptedChatModel

MODULE = '''\
"""A tiny calculator."""

LIMIT = 10


def add(a, b):
    """The sum of a and b.

    >>> add(2, 3)
    5
    """
    raise NotImplementedError


def mul(a, b):
    """The product of a and b.

    >>> mul(2, 3)
    6
    >>> mul(-1, 4)
    -4
    """
    raise NotImplementedError


def double(x):
    """Twice x."""
    return x * 2
'''

TESTS = """\
from calc import double


def test_double():
    assert double(4) == 8
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def project(root: Path, *, with_git: bool = True) -> Path:
    files = {"calc/__init__.py": MODULE, "tests/test_calc.py": TESTS}
    return files_project(root, files, with_git=with_git)


def files_project(root: Path, files: dict[str, str], *, with_git: bool = True) -> Path:
    """A project of `files` (relative path to text), committed on `main` in a new repository."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if with_git:
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
    return root


def answers(**defs: str) -> ScriptedChatModel:
    """A model that answers an edit of the step for `name` (``1-name``) with defs[name].

    It reads what the call is for from its metadata (purpose, step), never the prompt.
    """

    def respond(messages: list[BaseMessage], info: CallInfo) -> str:
        for name, source in defs.items():
            if info.purpose == "project_edit" and info.step.partition("-")[2] == name:
                return "```python\n" + textwrap.dedent(source) + "```"
        return "no idea"

    return ScriptedChatModel(respond=respond)


def ctx(tmp_path: Path, repo: Path, **kw: object) -> Context:
    return Context(workspace=str(tmp_path / "ws"), repo=str(repo), sandbox_timeout_s=60,
                   max_attempts=2, **kw)  # type: ignore[arg-type]  # fmt: skip


GOOD_ADD = '''
def add(a, b):
    """The sum of a and b."""
    return a + b
'''
GOOD_MUL = '''
def mul(a, b):
    """The product of a and b."""
    return a * b
'''


def slow_calc() -> ScriptedChatModel:
    """For ``--models-factory``: answers add and mul, ATOM_TEST_LATENCY seconds per call."""
    model = answers(add=GOOD_ADD, mul=GOOD_MUL)
    model.latency_s = float(os.environ.get("ATOM_TEST_LATENCY", "0"))
    return model
