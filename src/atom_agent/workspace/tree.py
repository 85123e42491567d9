"""The workspace tree as a typed API: runs, steps, attempts, json files, commits."""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from atom_agent.errors import (
    CommitError,
    CorruptFileError,
    SchemaVersionError,
    WorkspaceError,
    WorkspaceNotFoundError,
)
from atom_agent.workspace import _commit
from atom_agent.workspace.atomic import atomic_write_json, atomic_write_text, clean_temp_files
from atom_agent.workspace.history import clean_messages

PLAIN_DIR = "plain"
"""A run's plain answer (candidate zero), beside its steps."""

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
"""Version written into every json file of the tree; readers refuse newer versions."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def now_iso() -> str:
    """The current UTC time as an ISO-8601 string (what every ``*_at`` field holds)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def check_id(kind: str, value: str) -> str:
    """`value` if it is a valid run / step id, else :class:`WorkspaceError` naming `kind`."""
    if not isinstance(value, str) or not _ID.match(value) or value in (".", ".."):
        raise WorkspaceError(
            f"{kind} {value!r} is not a valid id (1–128 chars: letters, digits, . _ : -; "
            f"starting with a letter or digit)"
        )
    return value


@dataclass(frozen=True)
class RunRef:
    """A run directory: ``runs/<run_id>/``."""

    run_id: str
    path: Path

    @property
    def run_json(self) -> Path:
        """``run.json``: task, status, models, timings, usage."""
        return self.path / "run.json"

    @property
    def plan_json(self) -> Path:
        """``plan.json``: the current plan and its revisions."""
        return self.path / "plan.json"

    @property
    def report_md(self) -> Path:
        """``report.md``: the human summary."""
        return self.path / "report.md"

    @property
    def steps_dir(self) -> Path:
        """``steps/``."""
        return self.path / "steps"


@dataclass(frozen=True)
class StepRef:
    """A step directory: ``runs/<run_id>/steps/<step_id>/``."""

    run_id: str
    step_id: str
    path: Path

    @property
    def step_json(self) -> Path:
        """``step.json``: criteria, dependencies, status, attempts, final verdict."""
        return self.path / "step.json"

    @property
    def attempts_dir(self) -> Path:
        """``attempts/``."""
        return self.path / "attempts"

    @property
    def committed_dir(self) -> Path:
        """``committed/``."""
        return self.path / "committed"

    @property
    def artifacts(self) -> Path:
        """``committed/artifacts/``: the files of the attempt that passed (after a commit)."""
        return self.committed_dir / "artifacts"


@dataclass(frozen=True)
class AttemptRef:
    """An attempt directory: ``…/steps/<step_id>/attempts/<n>/`` (n counts from 1)."""

    run_id: str
    step_id: str
    n: int
    path: Path

    @property
    def staging(self) -> Path:
        """``staging/``: where the executor writes impl.py, test.py and the rest."""
        return self.path / "staging"

    @property
    def messages_dir(self) -> Path:
        """``messages/``."""
        return self.path / "messages"

    @property
    def history_json(self) -> Path:
        """``messages/history.json``: the attempt's cleaned conversation."""
        return self.messages_dir / "history.json"

    @property
    def verdict_json(self) -> Path:
        """``verdict.json``: the reflector's evidence and decision."""
        return self.path / "verdict.json"


class Workspace:
    """The workspace tree rooted at `root`; creates, reads and commits its parts.

    Handles (:class:`RunRef`, :class:`StepRef`, :class:`AttemptRef`) are small frozen values
    holding ids and paths, safe to keep in graph state. Every json file is written atomically
    and carries ``schema_version``.

    Example:
        >>> ws = Workspace(tmp)                                    # doctest: +SKIP
        >>> run = ws.create_run(task="add an LRU cache")           # doctest: +SKIP
        >>> step = ws.create_step(run, "cache", depends_on=[])     # doctest: +SKIP
        >>> attempt = ws.new_attempt(step)                         # doctest: +SKIP
        >>> (attempt.staging / "impl.py").write_text("...")        # doctest: +SKIP
        >>> ws.commit(step, attempt)                               # doctest: +SKIP
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().resolve()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def runs_dir(self) -> Path:
        """``runs/``."""
        return self.root / "runs"

    @property
    def checkpoints_path(self) -> Path:
        """``checkpoints.sqlite``: LangGraph checkpoints."""
        return self.root / "checkpoints.sqlite"

    # --- runs ------------------------------------------------------------------------------------

    def create_run(self, run_id: str | None = None, *, task: str, **fields: Any) -> RunRef:
        """Create ``runs/<run_id>/`` and its ``run.json``.

        Args:
            run_id: the id; default a sortable ``YYYYmmddTHHMMSS-<hex>``.
            task: the task text.
            **fields: more ``run.json`` fields (models, limits …), JSON-serialisable.

        Raises:
            WorkspaceError: the id is invalid or the run exists.
        """
        if run_id is None:
            run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        path = self.runs_dir / check_id("run_id", run_id)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()
        except FileExistsError:
            if (path / "run.json").exists() or not path.is_dir():
                raise WorkspaceError(f"run {run_id!r} already exists in {self.runs_dir}") from None
            # Half-created by a process that died (or hit a full disk) before run.json: finish it.
        run = RunRef(run_id, path)
        (path / "steps").mkdir(exist_ok=True)
        write_json(
            run.run_json,
            {
                "run_id": run_id,
                "task": task,
                "status": "created",
                "created_at": now_iso(),
                **fields,
            },
        )
        logger.info("created run %s", run_id)
        return run

    def run(self, run_id: str) -> RunRef:
        """The existing run `run_id`; raises :class:`WorkspaceNotFoundError` otherwise."""
        path = self.runs_dir / check_id("run_id", run_id)
        if not path.is_dir():
            raise WorkspaceNotFoundError(f"no run {run_id!r} in {self.runs_dir}")
        if not (path / "run.json").exists():
            # A folder left before its run.json was written is not a run yet (create_run
            # completes it).
            raise WorkspaceNotFoundError(f"run {run_id!r} in {self.runs_dir} has no run.json")
        return RunRef(run_id, path)

    def list_runs(self) -> list[RunRef]:
        """Every run, oldest first (by ``created_at``, then id)."""
        if not self.runs_dir.is_dir():
            return []
        runs = [
            RunRef(p.name, p)
            for p in self.runs_dir.iterdir()
            if p.is_dir() and _ID.match(p.name) and (p / "run.json").is_file()
        ]

        def created(run: RunRef) -> str:
            try:
                return str(self.read_run(run).get("created_at", ""))
            except WorkspaceError:
                return ""

        return sorted(runs, key=lambda r: (created(r), r.run_id))

    def read_run(self, run: RunRef) -> dict[str, Any]:
        """``run.json`` as a dict."""
        return read_json(run.run_json)

    def update_run(self, run: RunRef, **changes: Any) -> dict[str, Any]:
        """Merge `changes` into ``run.json`` (sets ``updated_at``); returns the new content."""
        data = self.read_run(run)
        data.update(changes, updated_at=now_iso())
        write_json(run.run_json, data)
        return data

    # --- plan ---------------------------------------------------------------------------------

    def write_plan(self, run: RunRef, plan: Mapping[str, Any], *, reason: str = "") -> int:
        """Make `plan` the current plan, keeping every earlier one; returns its revision (1…).

        ``plan.json`` holds ``revision``, ``plan`` (current) and ``revisions`` (all, oldest first,
        each with ``revision``, ``created_at``, ``reason``, ``plan``).
        """
        revisions: list[dict[str, Any]] = []
        if run.plan_json.exists():
            revisions = list(read_json(run.plan_json).get("revisions", []))
        revision = len(revisions) + 1
        revisions.append(
            {"revision": revision, "created_at": now_iso(), "reason": reason, "plan": dict(plan)}
        )
        write_json(
            run.plan_json, {"revision": revision, "plan": dict(plan), "revisions": revisions}
        )
        return revision

    def read_plan(self, run: RunRef) -> dict[str, Any]:
        """The current plan; raises :class:`WorkspaceNotFoundError` before the first plan."""
        return dict(read_json(run.plan_json)["plan"])

    def write_plain(self, run: RunRef, source: str, reply: str) -> Path:
        """``runs/<id>/plain/``: the model's plain answer to the whole task (candidate zero).

        ``impl.py`` is the code read from it, ``reply.md`` the reply as the model wrote it.
        Returns the folder.
        """
        folder = run.path / PLAIN_DIR
        atomic_write_text(folder / "reply.md", reply)
        atomic_write_text(folder / "impl.py", source)
        return folder

    def plain_dir(self, run: RunRef) -> Path:
        """Where the run's plain answer is (``runs/<id>/plain/``; may not exist)."""
        return run.path / PLAIN_DIR

    def write_report(self, run: RunRef, markdown: str) -> Path:
        """Replace ``report.md`` atomically; returns its path."""
        atomic_write_text(run.report_md, markdown)
        return run.report_md

    # --- steps -----------------------------------------------------------------------------------

    def create_step(
        self,
        run: RunRef,
        step_id: str,
        *,
        depends_on: Iterable[str] = (),
        **fields: Any,
    ) -> StepRef:
        """Create ``steps/<step_id>/`` with its ``step.json``, or update the existing step's.

        Args:
            run: the run.
            step_id: the plan's step id.
            depends_on: ids of the steps whose committed artifacts this step may read.
            **fields: more ``step.json`` fields (title, acceptance_criteria …).
        """
        path = run.steps_dir / check_id("step_id", step_id)
        deps = [check_id("dependency step_id", d) for d in depends_on]
        step = StepRef(run.run_id, step_id, path)
        if step.step_json.exists():  # planned again (a replan): its step.json is updated
            self.update_step(step, depends_on=deps, **fields)
            return step
        # A folder without step.json is a creation cut short (a crash, a full disk): redo it.
        (path / "attempts").mkdir(parents=True, exist_ok=True)
        write_json(
            step.step_json,
            {
                "step_id": step_id,
                "status": "pending",
                "depends_on": deps,
                "created_at": now_iso(),
                **fields,
            },
        )
        return step

    def step(self, run: RunRef, step_id: str) -> StepRef:
        """The existing step `step_id` of `run`."""
        path = run.steps_dir / check_id("step_id", step_id)
        if not path.is_dir():
            raise WorkspaceNotFoundError(f"no step {step_id!r} in run {run.run_id!r}")
        return StepRef(run.run_id, step_id, path)

    def list_steps(self, run: RunRef) -> list[StepRef]:
        """Every step of `run`, by creation time (then id)."""
        if not run.steps_dir.is_dir():
            return []
        steps = [
            StepRef(run.run_id, p.name, p)
            for p in run.steps_dir.iterdir()
            if p.is_dir() and (p / "step.json").is_file()
        ]
        return sorted(
            steps, key=lambda s: (str(self.read_step(s).get("created_at", "")), s.step_id)
        )

    def read_step(self, step: StepRef) -> dict[str, Any]:
        """``step.json`` as a dict."""
        return read_json(step.step_json)

    def update_step(self, step: StepRef, **changes: Any) -> dict[str, Any]:
        """Merge `changes` into ``step.json``; returns the new content."""
        data = self.read_step(step)
        data.update(changes, updated_at=now_iso())
        write_json(step.step_json, data)
        return data

    # --- attempts --------------------------------------------------------------------------------

    def new_attempt(self, step: StepRef) -> AttemptRef:
        """Create the next attempt (1, 2, …) with empty ``staging/`` and ``messages/``."""
        step.attempts_dir.mkdir(parents=True, exist_ok=True)
        n = max((a.n for a in self.list_attempts(step)), default=0) + 1
        while True:
            path = step.attempts_dir / str(n)
            try:
                path.mkdir()
                break
            except FileExistsError:  # a concurrent creator took n
                n += 1
        attempt = AttemptRef(step.run_id, step.step_id, n, path)
        attempt.staging.mkdir()
        attempt.messages_dir.mkdir()
        return attempt

    def attempt(self, step: StepRef, n: int) -> AttemptRef:
        """The existing attempt `n` of `step`."""
        path = step.attempts_dir / str(int(n))
        if n < 1 or not path.is_dir():
            raise WorkspaceNotFoundError(f"no attempt {n} of step {step.step_id!r}")
        return AttemptRef(step.run_id, step.step_id, int(n), path)

    def list_attempts(self, step: StepRef) -> list[AttemptRef]:
        """Every attempt of `step`, by number."""
        if not step.attempts_dir.is_dir():
            return []
        found = [
            AttemptRef(step.run_id, step.step_id, int(p.name), p)
            for p in step.attempts_dir.iterdir()
            if p.is_dir() and p.name.isdigit() and int(p.name) >= 1
        ]
        return sorted(found, key=lambda a: a.n)

    def write_history(
        self,
        attempt: AttemptRef,
        messages: Iterable[BaseMessage | Mapping[str, Any]],
        figures: Mapping[str, Any] | None = None,
        *,
        memories: list[str] | None = None,
    ) -> Path:
        """Write the attempt's conversation to ``messages/history.json`` atomically.

        `memories` are the ids of the long-term memories every call of the attempt carried
        (the project's rules in the task text) as ``memories_carried``.

        Messages are cleaned (:func:`~atom_agent.workspace.history.clean_message`): provider
        metadata, ids, usage and signatures dropped; tool calls and results kept. Each write
        replaces the file whole, so a stale file from a crashed earlier run is never appended to.
        `figures` (model and tool calls, the largest prompt, why the attempt stopped) go
        beside the messages as ``figures``.
        """
        cleaned = clean_messages(messages)
        clean_temp_files(attempt.messages_dir)
        write_json(
            attempt.history_json,
            {
                "run_id": attempt.run_id,
                "step_id": attempt.step_id,
                "attempt": attempt.n,
                "written_at": now_iso(),
                **({"figures": dict(figures)} if figures else {}),
                **({"memories_carried": list(memories)} if memories else {}),
                "messages": cleaned,
            },
        )
        return attempt.history_json

    def read_history(self, attempt: AttemptRef) -> list[dict[str, Any]]:
        """The cleaned messages of ``history.json``."""
        return list(read_json(attempt.history_json)["messages"])

    def write_verdict(self, attempt: AttemptRef, verdict: Mapping[str, Any]) -> Path:
        """Replace ``verdict.json`` atomically."""
        write_json(attempt.verdict_json, verdict)
        return attempt.verdict_json

    def read_verdict(self, attempt: AttemptRef) -> dict[str, Any]:
        """``verdict.json`` as a dict."""
        return read_json(attempt.verdict_json)

    # --- commit and dependencies -----------------------------------------------------------------

    def commit(self, step: StepRef, attempt: AttemptRef) -> Path:
        """Promote the attempt's staging to ``committed/artifacts/`` atomically; returns that path.

        Readers see the previous commit or the new one in full, never a mix; a crash at any
        point leaves the previous commit in place. Symlinks, special files, ``__pycache__`` and
        ``.pytest_cache`` in staging are not promoted.
        """
        if (attempt.run_id, attempt.step_id) != (step.run_id, step.step_id):
            raise WorkspaceError(
                f"attempt {attempt.n} belongs to step {attempt.step_id!r}, not {step.step_id!r}"
            )
        _commit.promote(attempt.staging, step.committed_dir, attempt.n)
        logger.info("committed %s/%s attempt %d", step.run_id, step.step_id, attempt.n)
        return step.artifacts

    def dependency_artifacts(self, step: StepRef) -> dict[str, Path]:
        """The committed artifact directories of the step's ``depends_on``, by step id.

        Raises:
            CommitError: a dependency has not been committed (the step must not run yet).
        """
        run = RunRef(step.run_id, step.path.parent.parent)
        result: dict[str, Path] = {}
        for dep_id in self.read_step(step).get("depends_on", []):
            dep = StepRef(step.run_id, dep_id, run.steps_dir / dep_id)
            if _commit.current_attempt(dep.committed_dir) is None:
                raise CommitError(
                    f"step {step.step_id!r} depends on {dep_id!r}, which has no committed artifacts"
                )
            result[dep_id] = dep.artifacts
        return result


_RESTORE = (
    "restore it from a backup, or move the run folder aside (`atom-agent runs list` flags it) "
    "and run the task again"
)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write `data` with ``schema_version`` first, atomically."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        **{k: v for k, v in data.items() if k != "schema_version"},
    }
    atomic_write_json(path, payload)


def read_json(path: Path) -> dict[str, Any]:
    """Read a tree json file, checking its ``schema_version``.

    Raises:
        WorkspaceNotFoundError: the file does not exist.
        SchemaVersionError: no or a newer ``schema_version``.
        WorkspaceError: the file is not a JSON object.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkspaceNotFoundError(f"{path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise CorruptFileError(
            f"{path} is corrupt: not UTF-8 text (byte {exc.start}); {_RESTORE}"
        ) from None
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptFileError(f"{path} is corrupt: not valid JSON ({exc}); {_RESTORE}") from None
    if not isinstance(data, dict):
        raise CorruptFileError(f"{path} is corrupt: it must hold a JSON object; {_RESTORE}")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SchemaVersionError(f"{path} has no schema_version: not a workspace file")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has schema_version {version}; this atom_agent reads up to {SCHEMA_VERSION} "
            f"(upgrade atom_agent)"
        )
    return data
