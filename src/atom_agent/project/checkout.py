"""The run's own checkout of a project: a git worktree on ``atom/<run-id>``, or a copy with git.

A user's project is theirs: the agent never writes its working tree or its checked-out branch.
A run works in ``runs/<run-id>/project/``: for a git repository a ``git worktree`` on a new
branch ``atom/<run-id>`` starting at the project's HEAD (the user's branch and files are never
touched; uncommitted changes in their working tree are not included); for a folder that is not a
git repository, a copy of it made into a repository whose first commit is the copy, so the
result is the same branch and a patch. Every committed step is a commit on that branch whose
message carries ``Atom-Step`` / ``Atom-Attempt`` trailers: after a crash the branch, not the
checkpoint, says what is committed (:meth:`Checkout.committed`), and :meth:`Checkout.reset`
drops whatever an interrupted attempt left in the worktree.

The branch is the user's once the run is over: a finished run removes its worktree
(:meth:`Checkout.release`), since git lets a branch be checked out in one worktree only and
``git switch atom/<run-id>`` in the user's repository would fail while the run's held it. The
branch, its commits and its reflog stay in the user's repository; the worktree is kept only while
the run can still be resumed (waiting for an answer, or interrupted).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from atom_agent.errors import ConfigError, WorkspaceError

BRANCH_PREFIX = "atom/"
"""Branches a run commits on: ``atom/<run-id>``."""

IGNORED = (".git", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
           ".ruff_cache", "node_modules", "*.pyc", "*.egg-info", "build", "dist")  # fmt: skip
"""What a copy of a non-git project leaves out (environments, caches, build output)."""

_IDENTITY = ("-c", "user.name=atom-agent", "-c", "user.email=atom-agent@localhost",
             "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")  # fmt: skip
"""Commits are the agent's; the user's hooks and signing keys are not run for them."""


def git(cwd: Path, *args: str, check: bool = True, timeout: float = 120) -> str:
    """Runs ``git ARGS`` in `cwd` and returns its stdout.

    Raises:
        WorkspaceError: git is missing, or (with `check`) the command failed; the message
            carries git's own error.
    """
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
        )
    except FileNotFoundError as exc:
        raise WorkspaceError("git is not installed: a run on a project needs git") from exc
    except subprocess.TimeoutExpired as exc:
        raise WorkspaceError(f"git {' '.join(args)} took over {timeout:.0f} s in {cwd}") from exc
    if check and proc.returncode != 0:
        raise WorkspaceError(
            f"git {' '.join(args)} failed in {cwd}: {(proc.stderr or proc.stdout).strip()[:500]}"
        )
    return proc.stdout


def project_root(path: str | Path) -> Path:
    """The project folder `path` names, resolved.

    Raises:
        ConfigError: it does not exist or is not a folder.
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ConfigError(f"--repo {str(path)!r} is not a folder: give the project's root folder")
    return root.resolve()


def _toplevel(root: Path) -> Path | None:
    """The git work tree `root` belongs to, or None when it is not in one."""
    out = git(root, "rev-parse", "--show-toplevel", check=False).strip()
    return Path(out).resolve() if out else None


@dataclass(frozen=True)
class Checkout:
    """Where a run works on a project, and what it started from.

    Attributes:
        repo: the user's project (never written).
        worktree: the run's checkout, ``runs/<run-id>/project``.
        branch: ``atom/<run-id>``.
        base: the commit the branch starts from (the project's HEAD, or the copy's commit).
        kind: ``worktree`` (a git repository) or ``copy`` (a folder copied into a new one).
        subdir: the project's path inside its git repository ('' at the top).
    """

    repo: str
    worktree: str
    branch: str
    base: str
    kind: str
    subdir: str = ""

    @property
    def root(self) -> Path:
        """The project's root inside the worktree (where its tests run)."""
        return Path(self.worktree) / self.subdir if self.subdir else Path(self.worktree)

    def to_dict(self) -> dict[str, Any]:
        """What run.json records under ``project``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkout:
        """The checkout run.json recorded."""
        return cls(**data)

    @property
    def released(self) -> bool:
        """The run's worktree is gone (:meth:`release`): the branch is read in the user's repo."""
        return self.kind == "worktree" and not (Path(self.worktree) / ".git").exists()

    def _at(self) -> tuple[Path, str]:
        """Where to read the branch with git, and its name there.

        The worktree and ``HEAD`` while it exists, else the user's repository and the branch.
        """
        if self.released:
            return Path(self.repo), self.branch
        return Path(self.worktree), "HEAD"

    def head(self) -> str:
        """The branch's current commit."""
        cwd, rev = self._at()
        return git(cwd, "rev-parse", rev).strip()

    def release(self) -> bool:
        """Removes the run's git worktree, so the branch can be checked out in the user's repo.

        For a copy (a folder that was not a git repository) the worktree is the only home of
        the branch and stays. Returns whether a worktree was removed.

        Raises:
            WorkspaceError: git refused.
        """
        if self.kind != "worktree" or self.released:
            return False
        git(Path(self.repo), "worktree", "remove", "--force", self.worktree)
        git(Path(self.repo), "worktree", "prune")
        return True

    def reset(self) -> None:
        """Back to the branch's last commit: an interrupted attempt's edits and files go."""
        wt = Path(self.worktree)
        git(wt, "reset", "--quiet", "--hard", "HEAD")
        git(wt, "clean", "-fdqx")

    def commit(self, paths: Sequence[str], message: str, trailers: dict[str, str]) -> str:
        """Commits `paths` (relative to the project root) on the branch; returns the commit.

        Raises:
            WorkspaceError: a path is outside the project, or git refused.
        """
        wt = Path(self.worktree)
        rel = [_inside(self.root, p, wt) for p in paths]
        git(wt, "add", "--", *rel)
        body = message.strip() + "\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers.items())
        git(wt, *_IDENTITY, "commit", "--quiet", "--allow-empty", "-m", body)
        return self.head()

    def committed(self, trailers: dict[str, str]) -> str | None:
        """The branch commit carrying all of `trailers` (since `base`), or None."""
        cwd, rev = self._at()
        log = git(cwd, "log", "--format=%H%x00%B%x01", f"{self.base}..{rev}")
        for entry in log.split("\x01"):
            sha, _, body = entry.strip().partition("\x00")
            if sha and all(f"{k}: {v}" in body for k, v in trailers.items()):
                return sha
        return None

    def diff_stat(self) -> str:
        """``git diff --stat`` of the branch against its base."""
        cwd, rev = self._at()
        return git(cwd, "diff", "--stat", self.base, rev).rstrip()

    def patch(self) -> str:
        """The branch's change as one patch against its base (``git apply``-able)."""
        cwd, rev = self._at()
        return git(cwd, "diff", "--binary", self.base, rev)


def open_checkout(repo: str | Path, worktree: Path, run_id: str) -> Checkout:
    """The run's checkout of `repo` at `worktree`, made on first call and reused after.

    Raises:
        ConfigError: `repo` is not a folder, or `worktree` lies inside it.
        WorkspaceError: git failed (its message is kept).
    """
    root = project_root(repo)
    worktree = worktree.resolve()
    if worktree == root or root in worktree.parents:
        raise ConfigError(
            f"the workspace {worktree.parent.parent.parent} is inside the project {root}: "
            "use a workspace outside it (--workspace), the project is never written"
        )
    branch = BRANCH_PREFIX + run_id
    top = _toplevel(root)
    if top is not None and (top / ".git").exists():
        subdir = "" if top == root else root.relative_to(top).as_posix()
        if not (worktree / ".git").exists():
            base = git(top, "rev-parse", "HEAD", check=False).strip()
            if not base:
                raise ConfigError(f"{top} has no commit yet: commit once, then run on it")
            worktree.parent.mkdir(parents=True, exist_ok=True)
            if worktree.exists():  # a crash between mkdir and `worktree add`
                shutil.rmtree(worktree)
            git(top, "worktree", "prune")
            if git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False):
                # Released by a finish that a crash then undid: the branch is back in its
                # worktree, its commits as they were.
                git(top, "worktree", "add", "--quiet", str(worktree), branch)
            else:
                git(top, "worktree", "add", "--quiet", "-b", branch, str(worktree), base)
        base = _branch_base(worktree, branch)
        return Checkout(str(root), str(worktree), branch, base, "worktree", subdir)
    if not (worktree / ".git").exists():
        tmp = worktree.with_name(worktree.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        shutil.copytree(root, tmp, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED))
        git(tmp, "init", "--quiet", "-b", branch)
        # Everything the folder holds, ignored files too (a generated version.py the package
        # imports): reset() cleans what is not committed.
        git(tmp, "add", "-A", "--force")
        git(tmp, *_IDENTITY, "commit", "--quiet", "--allow-empty", "-m", f"copy of {root}")
        if worktree.exists():
            shutil.rmtree(worktree)
        tmp.rename(worktree)  # the copy appears whole or not at all
    first = git(worktree, "rev-list", "--max-parents=0", "HEAD").split()
    return Checkout(str(root), str(worktree), branch, first[0], "copy")


def _branch_base(worktree: Path, branch: str) -> str:
    """The commit `branch` was created at (its reflog's first entry)."""
    out = git(worktree, "reflog", "show", "--format=%H", branch, check=False).split()
    if not out:
        raise WorkspaceError(f"branch {branch} in {worktree} has no history: remove the folder")
    return out[-1]


def _inside(root: Path, path: str, worktree: Path) -> str:
    """`path` (relative to the project root) as a path relative to the worktree."""
    full = (root / path).resolve()
    if worktree.resolve() not in full.parents:
        raise WorkspaceError(f"{path!r} is outside the project")
    return full.relative_to(worktree.resolve()).as_posix()
