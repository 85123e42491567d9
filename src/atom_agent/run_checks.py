"""What a run checks before it starts, and what happens to its run.json when it cannot go on.

Before anything is written: the task is UTF-8 text of a sane length, the run id is valid, and
every role's model can be loaded here (a missing API key or provider package fails the run at
once, with the fix, instead of leaving it at ``planning``). When a run stops on an exception,
its ``run.json`` says ``failed`` with the reason (not ``running``), and a failure of the machine
(full disk, read-only or damaged file) becomes an :class:`EnvironmentFailure` that says how to
continue.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from atom_agent.context import Context
from atom_agent.environment import environment_failure
from atom_agent.errors import (
    AtomAgentError,
    ConfigError,
    CorruptFileError,
    EnvironmentFailure,
    InvalidInputError,
    ModelError,
    WorkspaceError,
)
from atom_agent.models.failures import model_failure
from atom_agent.models.registry import check_usable, resolve_default_model
from atom_agent.project.checkout import project_root
from atom_agent.resources import ROLES
from atom_agent.workspace import Workspace
from atom_agent.workspace.tree import RunRef, now_iso, read_json

logger = logging.getLogger(__name__)

MAX_TASK_CHARS = 20_000
"""Longest task text accepted (it is pinned into every executor prompt)."""


def check_task_text(task: object) -> None:
    """Raise :class:`InvalidInputError` unless `task` is non-empty UTF-8 text of a sane length."""
    if not isinstance(task, str) or not task.strip():
        raise InvalidInputError("the task must be a non-empty string")
    try:
        task.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A command-line argument whose bytes are not UTF-8 arrives with lone surrogates.
        raise InvalidInputError(
            f"the task is not valid UTF-8 text (an undecodable byte at character {exc.start}): "
            f"pass the task as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"
        ) from None
    if len(task) > MAX_TASK_CHARS:
        raise InvalidInputError(
            f"the task is {len(task)} characters; at most {MAX_TASK_CHARS} are accepted "
            f"(put long specifications in a file the task refers to)"
        )


def check_models(ctx: Context, models: BaseChatModel | Mapping[str, BaseChatModel] | None) -> None:
    """Check every role's model can be loaded here, before the run writes anything.

    Roles given as chat models need no check; the others come from the Context's specs.

    Raises:
        ConfigError: a spec is malformed, its provider package is missing, or its API key is
            not set (``MissingCredentialsError`` / ``ModelUnavailableError``: both say the fix).
    """
    if isinstance(models, BaseChatModel):
        return
    for role in ROLES:
        if models is not None and role in models:
            continue
        check_usable(resolve_default_model(ctx.model_for(role) or None).spec, base_url=ctx.base_url)


def check_project(ctx: Context) -> None:
    """Refuse a run on a project that is not a folder, or whose workspace lies inside it.

    Raises:
        ConfigError: what to fix.
    """
    if not ctx.repo:
        return
    root = project_root(ctx.repo)
    workspace = Path(ctx.workspace).expanduser().resolve()
    if workspace == root or root in workspace.parents:
        raise ConfigError(
            f"the workspace {workspace} is inside the project {root}: the project is never "
            "written, so give a workspace outside it (--workspace)"
        )


def check_run_files(workspace: Workspace, run_id: str) -> None:
    """Refuse to resume over corrupt tree files: the run would go on (and say "done") over them.

    A step folder without ``step.json`` is a creation cut short and is tolerated (the step is
    created again when the run reaches it).

    Raises:
        CorruptFileError: run.json, plan.json or a step.json cannot be read; every such file is
            named, with what to do.
    """
    run = RunRef(run_id, workspace.runs_dir / run_id)
    files = [run.run_json, run.plan_json] + (
        sorted(p / "step.json" for p in run.steps_dir.iterdir() if p.is_dir())
        if run.steps_dir.is_dir()
        else []
    )
    problems = []
    for path in files:
        if not path.exists():
            continue
        try:
            read_json(path)
        except WorkspaceError as exc:
            problems.append(str(exc).split(";", 1)[0])
    if problems:
        raise CorruptFileError(
            f"run {run_id!r} cannot be resumed: " + "; ".join(problems) + ". Restore the "
            f"file(s) from a backup, or move {run.path} aside and run the task again"
        )


@contextlib.contextmanager
def failing_run(workspace: Workspace, run_id: str, resumable: Callable[[], bool]) -> Iterator[None]:
    """Mark the run failed in ``run.json`` when the block raises; explain machine failures.

    The checkpoint stays, so ``resume`` continues the run once the cause is fixed. When the
    run stopped before its first checkpoint (`resumable` says False), nothing can continue
    it: its folder (which holds nothing yet) is removed, so the same command can run again.

    Raises:
        EnvironmentFailure: the block failed because of the machine (the message says how to
            continue); any other exception is re-raised as it was.
    """
    try:
        yield
    except Exception as exc:
        can_resume = _safely(resumable)
        env: AtomAgentError | None = environment_failure(exc, run_id=run_id if can_resume else None)
        served = model_failure(exc) if env is None else None
        if served is not None:
            # A model server that died or answers garbage: one line, and how to go on.
            then = f"atom-agent resume {run_id}" if can_resume else "run the task again"
            env = ModelError(f"{served}; once it is back: {then}")
        reason = str(env) if env is not None else f"{type(exc).__name__}: {exc}"
        if can_resume:
            _mark_failed(workspace, run_id, reason)
        else:
            shutil.rmtree(workspace.runs_dir / run_id, ignore_errors=True)
            if isinstance(env, EnvironmentFailure):
                env = EnvironmentFailure(f"{env}; then run the task again (it had not started)")
        if env is not None:
            raise env from exc
        raise


def _safely(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - a full disk may fail the check too: assume resumable
        logger.info("could not tell whether the run has a checkpoint: %s", exc)
        return True


def _mark_failed(workspace: Workspace, run_id: str, reason: str) -> None:
    """Best effort: a full disk may refuse this write too (the checkpoint decides on resume)."""
    try:
        run = workspace.run(run_id)
        workspace.update_run(
            run, status="failed", stop_reason=f"error: {reason[:1000]}", failed_at=now_iso()
        )
    except (WorkspaceError, OSError) as exc:
        logger.info("could not mark run %s failed: %s", run_id, exc)
