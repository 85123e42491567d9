"""Run a task to its end (or to a question), resume it, with SQLite checkpoints in the workspace."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from atom_agent.context import Context
from atom_agent.environment import check_workspace
from atom_agent.errors import ConfigError, InvalidInputError, NoCheckpointError
from atom_agent.graph import build_graph
from atom_agent.locks import exclusive, run_lock_path
from atom_agent.nodes.flow import new_run_id
from atom_agent.resources import Models, Resources
from atom_agent.run_checks import (
    MAX_TASK_CHARS,
    check_models,
    check_project,
    check_run_files,
    check_task_text,
    failing_run,
)
from atom_agent.workspace import Workspace
from atom_agent.workspace.tree import check_id

logger = logging.getLogger(__name__)

__all__ = ["MAX_TASK_CHARS", "RunOutcome", "resume_run", "run_task"]

FINISHED = frozenset({"done", "failed", "budget_exhausted", "rejected"})
"""Run statuses after which there is nothing to resume."""


EventHandler = Callable[[str, Any], None]
"""Receives ``("updates", {node: update})``, ``("custom", event)`` and ``("token", piece)``
(:class:`TokenRelay`) while a run streams."""


class TokenRelay(BaseCallbackHandler):
    """Hands each piece a model decodes to an :data:`EventHandler` as ``("token", piece)``.

    `piece` is ``{"run": model call id, "text": the piece, "last": whether the reply is over}``.
    A plain callback handler, not a streaming one: a model that streams only for streaming
    handlers (a served model) is called as before; the embedded model reports each piece
    it decodes either way.
    """

    def __init__(self, on_event: EventHandler) -> None:
        self.on_event = on_event

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """A decoded piece."""
        last = getattr(getattr(chunk, "message", None), "chunk_position", None) == "last"
        text = token if isinstance(token, str) else ""
        self.on_event("token", {"run": str(run_id), "text": text, "last": last})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """The reply is over (also for a model that reported no piece)."""
        self.on_event("token", {"run": str(run_id), "text": "", "last": True})


@dataclass
class RunOutcome:
    """How a run ended (or paused)."""

    run_id: str
    status: str
    stop_reason: str = ""
    run_dir: str = ""
    report: str | None = None
    result: str | None = None
    question: dict[str, Any] | None = None
    step_status: dict[str, str] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def _has_pending_writes(saver: SqliteSaver, config: RunnableConfig) -> bool:
    """Whether the last superstep's nodes finished but the checkpoint after them is missing.

    (A full disk after a node's writes were saved.) Invoking with no input applies those
    writes and goes on, although the snapshot shows nothing next.
    """
    found = saver.get_tuple(config)
    return bool(found is not None and found.pending_writes)


def _stream(
    graph: Any,
    payload: Any,
    config: RunnableConfig,
    ctx: Context,
    on_event: EventHandler | None,
) -> None:
    """Run the graph to its end or its next interrupt, streaming events to `on_event`."""
    if on_event is None:
        # Nobody watches: no event stream. Streaming custom events (and the executor agent's,
        # through subgraphs) makes LangGraph hand every task to a worker thread and wait on
        # the stream; invoking runs each step's single task inline.
        graph.invoke(payload, config, context=ctx)
        return
    given = config.get("callbacks")
    handlers = list(given) if isinstance(given, list) else []
    watched: RunnableConfig = {**config, "callbacks": [*handlers, TokenRelay(on_event)]}
    for namespace, mode, chunk in graph.stream(
        payload,
        watched,
        context=ctx,
        stream_mode=["updates", "custom"],
        subgraphs=True,
    ):
        if mode == "custom" or not namespace:
            on_event(mode, chunk)


def _outcome(graph: Any, config: RunnableConfig, workspace: Workspace, run_id: str) -> RunOutcome:
    snapshot = graph.get_state(config)
    values = snapshot.values or {}
    run_dir = workspace.runs_dir / run_id
    question = None
    for task in snapshot.tasks:
        for intr in task.interrupts:
            question = intr.value if isinstance(intr.value, dict) else {"value": intr.value}
    status = "interrupted" if question else str(values.get("status", "unknown"))
    report = run_dir / "report.md"
    return RunOutcome(
        run_id=run_id,
        status=status,
        stop_reason=str(values.get("stop_reason", "")),
        run_dir=str(run_dir),
        report=str(report) if report.exists() else None,
        result=values.get("result_dir") or None,
        question=question,
        step_status=dict(values.get("step_status") or {}),
        usage=dict(values.get("usage") or {}),
    )


def run_task(
    task: str,
    context: Context | None = None,
    *,
    models: Models | None = None,
    resources: Resources | None = None,
    run_id: str | None = None,
    on_event: EventHandler | None = None,
) -> RunOutcome:
    """Run `task` until it is done, fails, runs out of budget, or asks a question.

    Checkpoints go to ``<workspace>/checkpoints.sqlite`` (thread id = run id), so an
    interrupted or killed run continues with :func:`resume_run`.

    Args:
        task: the software task.
        context: the configuration (default: ``Context.from_env()``).
        models: chat model(s) to use instead of the Context's model specs (tests, scripts).
        resources: open Resources to run on (a batch or an evaluation shares its models and
            memory between runs this way); the caller closes them. Default: Resources are
            built from the Context and `models` for this run and closed at its end.
        run_id: the run id (default: a new, sortable one).
        on_event: called with every stream part, for progress displays.
    """
    check_task_text(task)
    ctx = context or (resources.ctx if resources is not None else Context.from_env())
    check_models(ctx, resources.models if resources is not None else models)
    check_project(ctx)
    workspace = Workspace(Path(ctx.workspace).expanduser())
    rid = run_id or new_run_id()
    check_id("run_id", rid)  # before it names a lock file
    check_workspace(workspace.root)
    config: RunnableConfig = {"configurable": {"thread_id": rid}, "recursion_limit": 10_000}
    with exclusive(run_lock_path(workspace.root, rid), f"run {rid!r}"):
        if (workspace.runs_dir / rid).exists():
            raise InvalidInputError(
                f"run {rid!r} already exists in {workspace.root}: continue it with resume, "
                f"or choose another run id"
            )
        with _resources(ctx, models, resources) as res:
            # The run directory does not exist, so any checkpoint under this id is a leftover
            # (e.g. a run abandoned before its first step): never mix it into the new run.
            res.checkpointer.delete_thread(rid)
            graph = compiled_graph(res)
            with failing_run(workspace, rid, lambda: bool(graph.get_state(config).values)):
                _stream(graph, {"task": task, "run_id": rid}, config, ctx, on_event)
            return _outcome(graph, config, workspace, rid)


def compiled_graph(res: Resources) -> Any:
    """The graph over `res` with its workspace's checkpointer, compiled once per Resources.

    Compiling costs tens of milliseconds (LangGraph inspects every node function); a batch or
    a script running many tasks on one Resources pays it once.
    """
    return res.memo("graph", lambda: build_graph(res, checkpointer=res.checkpointer))


@contextmanager
def _resources(
    ctx: Context, models: Models | None, resources: Resources | None
) -> Iterator[Resources]:
    """The Resources of one run: derived from the caller's, or built here and closed after.

    Raises:
        ConfigError: both `models` and `resources` were given.
    """
    if resources is not None:
        if models is not None:
            raise ConfigError("give models or resources, not both (Resources carry models)")
        yield resources if resources.ctx == ctx else resources.for_context(ctx)
        return
    with Resources(ctx, models=models) as owned:
        yield owned


def resume_run(
    run_id: str,
    context: Context | None = None,
    *,
    answer: Any = None,
    models: Models | None = None,
    resources: Resources | None = None,
    on_event: EventHandler | None = None,
) -> RunOutcome:
    """Continue a run: answer its pending question, or pick up after a crash where it stopped.

    Committed steps are never redone: the graph continues from its last checkpoint.

    Raises:
        WorkspaceError: no such run, or it has no checkpoint to resume from.
        InvalidInputError: the run waits for an answer and none was given.
    """
    ctx = context or (resources.ctx if resources is not None else Context.from_env())
    check_models(ctx, resources.models if resources is not None else models)
    workspace = Workspace(Path(ctx.workspace).expanduser())
    check_id("run_id", run_id)
    if not (workspace.runs_dir / run_id).is_dir():
        workspace.run(run_id)  # raises WorkspaceError for an unknown run
    check_workspace(workspace.root)
    with exclusive(run_lock_path(workspace.root, run_id), f"run {run_id!r}"):
        check_run_files(workspace, run_id)
        ctx = _on_its_project(ctx, workspace, run_id)
        with _resources(ctx, models, resources) as res:
            return _resume_locked(run_id, res, workspace, answer, on_event)


def _on_its_project(ctx: Context, workspace: Workspace, run_id: str) -> Context:
    """`ctx` with the project and test command the run was started with (run.json).

    A run on a project continues on it without ``--repo`` again; another project is refused.
    """
    recorded = workspace.read_run(workspace.run(run_id))
    repo, command = recorded.get("repo") or "", recorded.get("test_command") or ""
    if not repo:
        return ctx
    if ctx.repo and Path(ctx.repo).resolve() != Path(repo).resolve():
        raise ConfigError(
            f"run {run_id!r} works on {repo}, not on {ctx.repo}: resume it without --repo"
        )
    return ctx.replace(repo=repo, test_command=ctx.test_command or command)


def _resume_locked(
    run_id: str,
    res: Resources,
    workspace: Workspace,
    answer: Any,
    on_event: EventHandler | None,
) -> RunOutcome:
    config: RunnableConfig = {"configurable": {"thread_id": run_id}, "recursion_limit": 10_000}
    saver = res.checkpointer
    graph = compiled_graph(res)
    snapshot = graph.get_state(config)
    if not snapshot.values:
        raise NoCheckpointError(f"run {run_id!r} has no checkpoint to resume from")
    waiting = any(t.interrupts for t in snapshot.tasks)
    if waiting and (answer is None or (isinstance(answer, str) and not answer.strip())):
        raise InvalidInputError(f"run {run_id!r} is waiting for an answer: pass --answer")
    if not snapshot.next and not _has_pending_writes(saver, config):
        if snapshot.values.get("status") in FINISHED:
            return _outcome(graph, config, workspace, run_id)
        # Killed between writing a checkpoint and scheduling what follows it: nothing
        # can continue this thread. Drop it; the caller may start the run again.
        saver.delete_thread(run_id)
        raise NoCheckpointError(f"run {run_id!r} has no checkpoint to resume from")
    payload: Any = Command(resume=answer) if waiting else None
    with failing_run(workspace, run_id, lambda: True):
        _stream(graph, payload, config, res.ctx, on_event)
    return _outcome(graph, config, workspace, run_id)
