"""Batch runs: many tasks from a JSONL file, concurrent, isolated, resumable, one result each.

Each task becomes a run with a deterministic id (``<batch>.<task id>``), so re-running the same
batch finds what is done (a line in ``results.jsonl``), what was interrupted (a run directory
without a result: resumed from its checkpoint) and what never started. A task that crashes,
times out or runs out of budget is recorded as such and the batch goes on. A batch may have a
wall-clock budget of its own (``max_batch_seconds``): a task still running then is stopped by
its own budget, capped at what the batch had left when it started, and a task not yet started is
recorded as not run (and runs when the batch is invoked again).
"""

from __future__ import annotations

import dataclasses
import fcntl
import importlib.util
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.budget import now
from atom_agent.context import Context
from atom_agent.environment import check_results_path, check_workspace
from atom_agent.errors import (
    AtomAgentError,
    InvalidInputError,
    NoCheckpointError,
    WorkspaceNotFoundError,
)
from atom_agent.locks import batch_lock_path, exclusive
from atom_agent.models.replay import ReplayCache
from atom_agent.resources import Models, Resources
from atom_agent.run import FINISHED, MAX_TASK_CHARS, RunOutcome, resume_run, run_task
from atom_agent.workspace import Workspace

logger = logging.getLogger(__name__)

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
FINAL = frozenset({"done", "failed", "budget_exhausted", "interrupted", "error"})
NOT_RUN = "not_run"
"""The result of a task the batch's budget left no time to start: not final (a later
invocation runs it)."""
_SETTINGS = {f.name for f in dataclasses.fields(Context)} - {"workspace"}
_MAX_ERRORS_SHOWN = 20
GRAPH_ID = "atom_agent"
"""The graph's name in langgraph.json."""
_THREADS = uuid.UUID("6f1c2a4e-55b3-4f7e-9c1d-2b8e7a9d0c11")


@dataclass(frozen=True)
class BatchTask:
    """One line of the tasks file."""

    id: str
    task: str
    settings: dict[str, Any] = field(default_factory=dict)


def parse_tasks(path: Path) -> list[BatchTask]:
    """Read and validate a tasks file; every problem is reported (with its line) at once.

    Raises:
        InvalidInputError: the file is missing, empty, or has invalid lines.
    """
    if not path.is_file():
        raise InvalidInputError(f"tasks file {str(path)!r} does not exist")
    tasks: list[BatchTask] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            try:
                item = json.loads(text)
            except json.JSONDecodeError as exc:
                problems.append(f"line {number}: not valid JSON ({exc.msg})")
                continue
            task, problem = _task_of(item, seen, path.parent)
            if problem:
                problems.append(f"line {number}: {problem}")
            elif task is not None:
                seen[task.id] = number
                tasks.append(task)
    if problems:
        shown = "\n".join(problems[:_MAX_ERRORS_SHOWN])
        more = len(problems) - _MAX_ERRORS_SHOWN
        raise InvalidInputError(
            f"{path}: {len(problems)} invalid line(s); nothing was run:\n{shown}"
            + (f"\n… and {more} more" if more > 0 else "")
        )
    if not tasks:
        raise InvalidInputError(f"{path}: no tasks (one JSON object per line: id, task)")
    return tasks


def _task_of(item: Any, seen: Mapping[str, int], folder: Path) -> tuple[BatchTask | None, str]:
    if not isinstance(item, dict):
        return None, "expected a JSON object with 'id' and 'task'"
    task_id, task = item.get("id"), item.get("task")
    if not isinstance(task_id, str) or not TASK_ID.match(task_id):
        return None, f"'id' must be 1-64 letters, digits, - or _ (got {task_id!r})"
    if task_id in seen:
        return None, f"duplicate id {task_id!r} (first on line {seen[task_id]})"
    if not isinstance(task, str) or not task.strip():
        return None, "'task' must be a non-empty string"
    if len(task) > MAX_TASK_CHARS:
        return None, f"'task' is longer than {MAX_TASK_CHARS} characters"
    unknown_keys = set(item) - {"id", "task", "settings", "repo"}
    if unknown_keys:
        return None, f"unknown key(s) {sorted(unknown_keys)} (allowed: id, task, settings, repo)"
    settings = item.get("settings", {})
    if not isinstance(settings, dict):
        return None, "'settings' must be an object of Context fields"
    if "repo" in item:  # the project to work in, relative to the tasks file's folder
        repo = item["repo"]
        if not isinstance(repo, str) or not repo.strip():
            return None, "'repo' must be a path to a project folder"
        where = (folder / repo).resolve()
        if not where.is_dir():
            return None, f"'repo' {repo!r} is not a folder (relative paths start at {folder})"
        settings = {**settings, "repo": str(where)}
    bad = set(settings) - _SETTINGS
    if bad:
        return None, f"unknown setting(s) {sorted(bad)}"
    try:
        Context(**settings)  # types and ranges, now rather than mid-batch
    except (AtomAgentError, TypeError) as exc:
        return None, f"bad settings: {exc}"
    return BatchTask(task_id, task.strip(), dict(settings)), ""


def batch_name(path: Path) -> str:
    """A run-id-safe name for a tasks file (its stem)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", path.stem).strip("-") or "batch"
    return name[:40]


class ResultsFile:
    """``results.jsonl``: a line per finished task, appended under a lock, read tolerantly."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def read(self) -> dict[str, dict[str, Any]]:
        """Finished results by task id (a torn last line from a killed writer is ignored)."""
        results: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return results
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict) and item.get("status") in FINAL and "id" in item:
                results[str(item["id"])] = item
        return results

    def append(self, result: Mapping[str, Any]) -> None:
        """Append one result line durably (flock across processes, fsync)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(result, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                # A writer killed mid-line leaves a torn line: start ours on a fresh one.
                handle.seek(0, os.SEEK_END)
                if handle.tell() > 0:
                    handle.seek(handle.tell() - 1)
                    if handle.read(1) != "\n":
                        handle.write("\n")
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class BatchProgress:
    """Counters a progress display reads (thread-safe updates through `update`)."""

    total: int
    skipped: int = 0
    done: int = 0
    passed: int = 0
    failed: int = 0
    running: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    not_run: int = 0
    """Tasks the batch's budget left no time to start."""
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def eta_s(self) -> float | None:
        """Seconds left, from the mean time per task finished in this invocation."""
        finished = self.done - self.skipped
        if finished <= 0:
            return None
        left = self.total - self.done
        return (time.monotonic() - self.started) / finished * left


@dataclass
class BatchOptions:
    """How a batch runs."""

    context: Context
    concurrency: int = 1
    isolated_memory: bool = False
    models: Models | None = None
    on_progress: Callable[[BatchProgress], None] | None = None
    server: str | None = None
    """A LangGraph Server URL: its workers run the tasks (``langgraph dev``, Platform)."""
    on_retry: Callable[[BatchTask, Mapping[str, Any]], None] | None = None
    """Told about each task retried because an earlier invocation recorded it as ``error``."""
    cache: str | None = None
    """A replay cache file (``--cache``): model calls answered from it when recorded there."""
    resources: Resources | None = None
    """Open Resources the tasks run on (their owner closes them); default: the batch builds
    one from `context` and `models` and closes it at the end."""
    max_batch_seconds: float | None = None
    """Wall-clock seconds this invocation may take (None: no limit). A task starts only while
    time is left, with its own wall-clock budget capped at what is left; the others are
    recorded as not run, with the reason."""


def run_batch(tasks_path: Path, results_path: Path, options: BatchOptions) -> dict[str, Any]:
    """Run (or resume) every task of `tasks_path`; returns the summary (also in summary.json).

    Raises:
        InvalidInputError: the tasks file is invalid (nothing runs), concurrency < 1, or the
            batch's budget is not positive.
    """
    tasks = parse_tasks(tasks_path)
    if options.concurrency < 1:
        raise InvalidInputError(f"concurrency must be at least 1, got {options.concurrency}")
    if options.max_batch_seconds is not None and not options.max_batch_seconds > 0:
        raise InvalidInputError(
            f"max_batch_seconds must be positive, got {options.max_batch_seconds}"
        )
    if options.server and importlib.util.find_spec("langgraph_sdk") is None:
        raise InvalidInputError("--server needs langgraph-sdk: pip install 'atom-agent[server]'")
    workspace = Workspace(Path(options.context.workspace).expanduser())
    if not options.server:
        check_workspace(workspace.root)
    check_results_path(results_path)
    # A second batch on these results would run every unfinished task again: refuse it.
    with exclusive(batch_lock_path(results_path), f"the batch {tasks_path} ({results_path})"):
        return _run_locked(tasks, tasks_path, results_path, workspace, options)


def _run_locked(
    tasks: list[BatchTask],
    tasks_path: Path,
    results_path: Path,
    workspace: Workspace,
    options: BatchOptions,
) -> dict[str, Any]:
    """Run a batch's unfinished tasks under its lock, then write summary.json."""
    name = batch_name(tasks_path)
    results = ResultsFile(results_path)
    pending, retried, progress = _to_run(tasks, results, options)

    # One Resources for the batch: its tasks share the loaded models and the open store.
    owned = options.resources is None
    cache = ReplayCache(options.cache) if options.cache else None
    resources = options.resources or Resources(options.context, models=options.models, cache=cache)

    deadline = None if options.max_batch_seconds is None else now() + options.max_batch_seconds
    not_run: list[dict[str, Any]] = []

    def work(task: BatchTask) -> None:
        left = None if deadline is None else deadline - now()
        if left is not None and left <= 0:
            result = _not_run(task, name, options.max_batch_seconds or 0.0)
            not_run.append({"id": task.id, "reason": result["stop_reason"]})
        else:
            with progress.lock:
                progress.running += 1
            _notify(options, progress)
            result = _run_one(task, name, workspace, options, resources, left)
            with progress.lock:
                progress.running -= 1
        results.append(result)
        _count(progress, result)
        _notify(options, progress)

    try:
        with ThreadPoolExecutor(max_workers=options.concurrency) as pool:
            for future in as_completed([pool.submit(work, t) for t in pending]):
                future.result()  # _run_one records task errors; this re-raises only bugs
    finally:
        if owned:
            resources.close()
        if cache is not None:
            cache.close()
    return _write_summary(tasks, results, results_path, cache, retried, not_run)


def _to_run(
    tasks: list[BatchTask], results: ResultsFile, options: BatchOptions
) -> tuple[list[BatchTask], list[BatchTask], BatchProgress]:
    """The tasks to run (not finished, or ended in error), those retried, progress so far."""
    finished = results.read()
    # Tasks whose latest result is ``error`` run again (resumed where they can).
    retried = [t for t in tasks if finished.get(t.id, {}).get("status") == "error"]
    for task in retried:
        # An `error` is a crash (a provider outage, a full disk), not the task's verdict.
        if options.on_retry is not None:
            options.on_retry(task, finished[task.id])
        logger.info("retrying task %s, which ended in error", task.id)
        del finished[task.id]
    progress = BatchProgress(total=len(tasks))
    for t in tasks:
        if t.id in finished:
            _count(progress, finished[t.id], skipped=True)
    pending = [t for t in tasks if t.id not in finished]
    return pending, retried, progress


def _write_summary(
    tasks: list[BatchTask],
    results: ResultsFile,
    results_path: Path,
    cache: ReplayCache | None,
    retried: list[BatchTask],
    not_run: list[dict[str, Any]],
) -> dict[str, Any]:
    """summary.json beside the results: the batch's figures, replays, retried and not run."""
    summary = summarize(tasks, results.read(), results_path)
    if cache is not None:  # how much of this invocation was a replay
        summary["model_calls"] = cache.counts()
    if retried:
        summary["retried"] = [t.id for t in retried]
    if not_run:  # this invocation's: they run when the batch is invoked again
        order = {t.id: i for i, t in enumerate(tasks)}
        summary["not_run"] = sorted(not_run, key=lambda r: order[r["id"]])
    summary_path = results_path.with_name("summary.json")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _notify(options: BatchOptions, progress: BatchProgress) -> None:
    if options.on_progress is not None:
        options.on_progress(progress)


def _count(progress: BatchProgress, result: Mapping[str, Any], *, skipped: bool = False) -> None:
    usage = result.get("usage") or {}
    status = result.get("status")
    with progress.lock:
        progress.done += 1
        progress.skipped += int(skipped)
        progress.passed += int(status == "done")
        progress.not_run += int(status == NOT_RUN)
        progress.failed += int(status not in ("done", NOT_RUN))
        progress.tokens += int(usage.get("total_tokens", 0))
        progress.cost_usd += float(usage.get("cost_usd", 0.0))


UNATTENDED: dict[str, Any] = {"ask_user": False}
"""A batch task's settings unless it states its own: nobody is there to answer a question."""


def _not_run(task: BatchTask, name: str, seconds: float) -> dict[str, Any]:
    """The result of a task the batch's wall-clock budget left no time to start."""
    return {
        "id": task.id,
        "run_id": f"{name}.{task.id}",
        "status": NOT_RUN,
        "stop_reason": f"not started: the batch's wall-clock budget ({seconds:g}s) was spent",
    }


def _run_one(
    task: BatchTask,
    name: str,
    workspace: Workspace,
    opts: BatchOptions,
    resources: Resources,
    left: float | None = None,
) -> dict[str, Any]:
    run_id = f"{name}.{task.id}"
    # Nobody answers a batch's questions unless its settings say a person is there.
    settings = {**UNATTENDED, **task.settings}
    if left is not None:
        # The task's own wall-clock budget ends with the batch's, at the latest.
        own = settings.get("max_wall_seconds", opts.context.max_wall_seconds)
        settings["max_wall_seconds"] = left if own is None else min(float(own), left)
    ctx = opts.context.replace(**settings)
    if opts.isolated_memory:
        ctx = ctx.replace(project_id=f"{ctx.project_id}.{task.id}")
    started = time.monotonic()
    try:
        if opts.server:
            result = _on_server(task, run_id, opts.server, settings)
        else:
            result = _result(task, _start_or_resume(task, run_id, ctx, workspace, resources))
    except Exception as exc:  # noqa: BLE001 - one task's crash must not stop the batch
        logger.exception("batch task %s crashed", task.id)
        result = {
            "id": task.id,
            "run_id": run_id,
            "status": "error",
            "stop_reason": f"{type(exc).__name__}: {exc}",
        }
    result["duration_s"] = round(time.monotonic() - started, 2)
    return result


def _start_or_resume(
    task: BatchTask, run_id: str, ctx: Context, workspace: Workspace, resources: Resources
) -> RunOutcome:
    run_dir = workspace.runs_dir / run_id
    if run_dir.exists():
        try:
            # Killed mid-run by an earlier invocation: continue from its checkpoint.
            return resume_run(run_id, ctx, resources=resources)
        except (NoCheckpointError, WorkspaceNotFoundError):
            # Killed before its first checkpoint: nothing to keep, start it again.
            stale = run_dir.with_name(f"{run_id}.abandoned-{int(time.time())}")
            shutil.move(str(run_dir), stale)
    return run_task(task.task, ctx, resources=resources, run_id=run_id)


def _on_server(
    task: BatchTask, run_id: str, url: str, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Run `task` on a LangGraph Server; a thread per task (id from the run id) makes it resumable.

    The server's own configuration (``ATOM_*`` in its environment) applies; the task's
    `settings` (its own, with the batch's budget) go along as the run's context.
    """
    from langgraph_sdk import get_sync_client
    from langgraph_sdk.errors import NotFoundError

    thread_id = str(uuid.uuid5(_THREADS, run_id))
    with get_sync_client(url=url) as client:
        try:
            values = client.threads.get_state(thread_id)["values"]
        except NotFoundError:
            client.threads.create(thread_id=thread_id, if_exists="do_nothing")
            values = {}
        if not isinstance(values, dict) or values.get("status") not in FINISHED:
            # Never started, or stopped mid-run (a server restart): run, or continue, it.
            payload = None if values else {"task": task.task, "run_id": run_id}
            client.runs.wait(thread_id, GRAPH_ID, input=payload, context=dict(settings))
            values = client.threads.get_state(thread_id)["values"]
    if not isinstance(values, dict):
        raise AtomAgentError(f"server returned no state for {run_id}")
    return {
        "id": task.id,
        "run_id": str(values.get("run_id", run_id)),
        "status": str(values.get("status", "error")),
        "stop_reason": str(values.get("stop_reason", "")),
        "steps": values.get("step_status") or {},
        "usage": values.get("usage") or {},
        "server": url,
        "thread_id": thread_id,
    }


def _result(task: BatchTask, outcome: RunOutcome) -> dict[str, Any]:
    return {
        "id": task.id,
        "run_id": outcome.run_id,
        "status": outcome.status,
        "stop_reason": outcome.stop_reason,
        "steps": outcome.step_status,
        "usage": outcome.usage,
        "report": outcome.report,
        **({"question": outcome.question} if outcome.question else {}),
    }


def summarize(
    tasks: list[BatchTask], results: Mapping[str, Mapping[str, Any]], path: Path
) -> dict[str, Any]:
    """Counts, pass rate, tokens, cost and time over the batch's results."""
    rows = [results[t.id] for t in tasks if t.id in results]
    by_status: dict[str, int] = {}
    for r in rows:
        by_status[str(r["status"])] = by_status.get(str(r["status"]), 0) + 1
    tokens = sum(int((r.get("usage") or {}).get("total_tokens", 0)) for r in rows)
    cost = sum(float((r.get("usage") or {}).get("cost_usd", 0.0)) for r in rows)
    durations = [float(r.get("duration_s", 0.0)) for r in rows]
    return {
        "results": str(path),
        "tasks": len(tasks),
        "finished": len(rows),
        "by_status": by_status,
        "pass_rate": round(by_status.get("done", 0) / len(tasks), 4) if tasks else 0.0,
        "tokens": tokens,
        "cost_usd": round(cost, 6),
        "seconds_per_task": round(sum(durations) / len(durations), 2) if durations else 0.0,
    }
