"""What a run on a project hands back: its branch, a patch, and the suite before and after."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from atom_agent.project.checkout import Checkout
from atom_agent.workspace.atomic import atomic_write_text

PATCH_FILE = "project.patch"
"""The branch's change against its base: ``runs/<id>/result/project.patch`` (``git apply``-able;
``atom-agent runs export`` copies it like any result)."""


def hand_back(
    checkout: Checkout, run_dir: Path, before: Mapping[str, int], after: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Writes the patch and returns the result's summary (run.json ``deliverable``).

    Args:
        checkout: the run's checkout.
        run_dir: ``runs/<id>``.
        before: the baseline's counts (``passed``, ``failed``).
        after: the suite summary of the last committed step's verdict (None: nothing committed).
    """
    patch = checkout.patch()
    path = run_dir / "result" / PATCH_FILE
    atomic_write_text(path, patch)
    summary: dict[str, Any] = {
        "kind": "project",
        "path": str(path.parent),
        "worktree": checkout.worktree,
        "branch": checkout.branch,
        "base": checkout.base,
        "head": checkout.head(),
        "repo": checkout.repo,
        "patch": str(path),
        "diff_stat": checkout.diff_stat(),
        "tests_before": dict(before),
    }
    if after is not None:
        regressions = list(after.get("regressions") or [])
        summary["tests"] = {
            "ok": not regressions,
            "failing": regressions,
            **dict(after.get("after") or {}),
        }
    return summary


def hand_back_markdown(summary: Mapping[str, Any], run_id: str) -> str:
    """The report.md section about the branch and the patch."""
    lines = ["## Result: a branch of your project", ""]
    branch, repo, base = summary["branch"], summary["repo"], str(summary.get("base") or "")[:12]
    where = (
        f"in the run's checkout `{summary['worktree']}`"
        if summary.get("worktree")
        else "in your repository (the run's checkout is removed)"
    )
    lines.append(
        f"Branch `{branch}` {where}; your project `{repo}` is otherwise untouched. "
        f"The patch: `{summary['patch']}` (`git apply` it, or "
        f"`atom-agent runs export {run_id} DIR`)."
    )
    if not summary.get("worktree"):
        lines += [
            "",
            "Review and merge it in your repository:",
            "",
            "```",
            f"cd {repo}",
            f"git log --stat {base}..{branch}   # what the run committed, step by step",
            f"git diff {base}...{branch}        # the whole change",
            f"git switch {branch}               # or: git worktree add ../review {branch}",
            f"git switch - && git merge {branch}  # take it into your branch",
            "```",
        ]
    stat = str(summary.get("diff_stat") or "").strip()
    lines += ["", "```", stat or "(no change committed)", "```", ""]
    before = summary.get("tests_before") or {}
    tests = summary.get("tests")
    line = (
        f"The project's tests before: {before.get('passed', 0)} passed, "
        f"{before.get('failed', 0)} failed"
    )
    if tests:
        line += f"; after: {tests.get('passed', 0)} passed, {tests.get('failed', 0)} failed"
        if tests.get("failing"):
            line += f"; **failing now: {', '.join(tests['failing'][:5])}**"
    lines.append(line + ".")
    steps = summary.get("steps") or []
    if steps:
        lines += [
            "",
            "| step | status | attempts | checks | verdict | commit |",
            "|---|---|---|---|---|---|",
        ]
        for s in steps:
            label = "verified" if s["verified"] else "unverified"
            commit = str(s.get("commit") or "")[:10] or "–"
            lines.append(f"| {s['step']} | {s['status']} | {s['attempts']} | {s['checks']} | "
                         f"{label}: {s['reason']} | {commit} |")  # fmt: skip
    return "\n".join(lines) + "\n"
