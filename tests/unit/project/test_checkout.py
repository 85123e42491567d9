"""The run's checkout: a worktree on atom/<run-id>, reset after a crash, commits by trailer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from atom_agent.errors import ConfigError
from atom_agent.project.checkout import open_checkout


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
    (root / "a.py").write_text("x = 'uncommitted work of the user'\n")
    return root


def test_the_worktree_starts_at_head_and_leaves_the_users_files_alone(
    repo: Path, tmp_path: Path
) -> None:
    co = open_checkout(repo, tmp_path / "ws" / "project", "r1")
    assert co.kind == "worktree" and co.branch == "atom/r1"
    assert (Path(co.worktree) / "a.py").read_text() == "x = 1\n"
    (Path(co.worktree) / "a.py").write_text("x = 2\n")
    sha = co.commit(["a.py"], "atom: change x", {"Atom-Step": "s1", "Atom-Attempt": "1"})
    assert _git(repo, "rev-parse", "atom/r1").strip() == sha
    assert (repo / "a.py").read_text() == "x = 'uncommitted work of the user'\n"
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert co.committed({"Atom-Step": "s1", "Atom-Attempt": "1"}) == sha
    assert co.committed({"Atom-Step": "s1", "Atom-Attempt": "2"}) is None
    assert "+x = 2" in co.patch()


def test_reopening_after_a_crash_reuses_the_checkout_and_reset_drops_partial_edits(
    repo: Path, tmp_path: Path
) -> None:
    co = open_checkout(repo, tmp_path / "ws" / "project", "r1")
    (Path(co.worktree) / "a.py").write_text("half-written")
    (Path(co.worktree) / "junk.py").write_text("left by a killed test run")
    again = open_checkout(repo, tmp_path / "ws" / "project", "r1")
    assert again == co
    again.reset()
    assert (Path(co.worktree) / "a.py").read_text() == "x = 1\n"
    assert not (Path(co.worktree) / "junk.py").exists()


def test_a_missing_folder_and_a_workspace_inside_the_project_are_refused(
    repo: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        open_checkout(tmp_path / "nope", tmp_path / "ws" / "project", "r1")
    with pytest.raises(ConfigError, match="inside the project"):
        open_checkout(repo, repo / "ws" / "runs" / "r1" / "project", "r1")


def test_a_copy_keeps_the_files_its_gitignore_names(tmp_path: Path) -> None:
    """A generated module the package imports (e.g. version.py) is part of the project."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / ".gitignore").write_text("version.py\n")
    (root / "version.py").write_text("version = '1.0'\n")
    co = open_checkout(root, tmp_path / "ws" / "project", "r1")
    assert co.kind == "copy"
    co.reset()
    assert (Path(co.worktree) / "version.py").read_text() == "version = '1.0'\n"


def test_release_frees_the_branch_and_the_record_reads_it_from_the_users_repo(
    repo: Path, tmp_path: Path
) -> None:
    co = open_checkout(repo, tmp_path / "ws" / "project", "r1")
    (Path(co.worktree) / "a.py").write_text("x = 2\n")
    sha = co.commit(["a.py"], "atom: change x", {"Atom-Step": "s1", "Atom-Attempt": "1"})
    assert co.release() and co.released and not Path(co.worktree).exists()
    assert not co.release()  # once only
    # Read from the user's repository now: the same commit, patch and trailers.
    assert co.head() == sha and "+x = 2" in co.patch() and "a.py" in co.diff_stat()
    assert co.committed({"Atom-Step": "s1"}) == sha
    other = tmp_path / "elsewhere"
    _git(repo, "worktree", "add", "--quiet", str(other), "atom/r1")  # held by no worktree now
    _git(repo, "worktree", "remove", str(other))
    # A finish undone by a crash opens the checkout again: the branch as it was.
    again = open_checkout(repo, tmp_path / "ws" / "project", "r1")
    assert again == co and not again.released and again.head() == sha
