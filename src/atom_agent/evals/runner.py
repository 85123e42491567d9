"""`atom-agent eval humaneval`: the agent and a single-shot baseline, scored by the tests."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from atom_agent.batch import BatchOptions, run_batch
from atom_agent.context import Context
from atom_agent.errors import WorkspaceError
from atom_agent.evals.humaneval import Problem, score, single_shot, task_text
from atom_agent.sandbox import Limits, SandboxRunner, SubprocessRunner
from atom_agent.services import Models, services_for
from atom_agent.workspace import Workspace

logger = logging.getLogger(__name__)


def _baseline_model(ctx: Context, models: Models | None) -> BaseChatModel:
    if isinstance(models, BaseChatModel):
        return models
    if models is not None and "executor" in models:
        return models["executor"]
    return services_for(ctx, None).model("executor")


def committed_source(workspace: Workspace, run_id: str, problem: Problem) -> str | None:
    """The committed impl.py of a run that defines the entry point (the last such step wins)."""
    try:
        run = workspace.run(run_id)
    except WorkspaceError:  # a task that crashed before creating its run
        return None
    found: str | None = None
    for step in workspace.list_steps(run):
        impl = step.artifacts / "impl.py"
        if impl.is_file():
            text = impl.read_text(encoding="utf-8", errors="replace")
            if f"def {problem.entry_point}" in text:
                found = text
    return found


def _attempts(workspace: Workspace, run_id: str) -> int:
    try:
        run = workspace.run(run_id)
    except WorkspaceError:
        return 0
    return sum(len(workspace.list_attempts(s)) for s in workspace.list_steps(run))


def attempt_sources(workspace: Workspace, run_id: str, problem: Problem) -> list[str]:
    """Every attempt's staged impl.py that defines the entry point, in the order written.

    A commit copies its staging, so this is every attempt the verifier saw.
    """
    try:
        run = workspace.run(run_id)
    except WorkspaceError:
        return []
    sources: list[str] = []
    for step in workspace.list_steps(run):
        for attempt in workspace.list_attempts(step):
            impl = attempt.staging / "impl.py"
            if impl.is_file():
                text = impl.read_text(encoding="utf-8", errors="replace")
                if f"def {problem.entry_point}" in text:
                    sources.append(text)
    return sources


def run_humaneval(
    problems: list[Problem],
    ctx: Context,
    out_dir: Path,
    *,
    models: Models | None = None,
    baseline: bool = True,
    concurrency: int = 1,
    runner: SandboxRunner | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the agent (and the baseline) on `problems`; returns and writes ``eval.json``."""
    runner = runner or SubprocessRunner()
    limits = Limits(timeout_s=10.0, cpu_s=10, memory_mb=512)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = out_dir / "humaneval.jsonl"
    tasks.write_text(
        "".join(
            # One function per problem: one step (the planner is held to it).
            json.dumps({"id": p.slug, "task": task_text(p), "settings": {"max_plan_steps": 1}})
            + "\n"
            for p in problems
        ),
        encoding="utf-8",
    )
    # The baseline first, one scored line per problem: cheap, and kept when a long agent run
    # is stopped; a re-run skips what is already scored (like the agent batch resumes).
    model = _baseline_model(ctx, models) if baseline else None
    baselines = _run_baseline(problems, model, out_dir / "baseline.jsonl", runner, limits,
                              on_progress) if model is not None else {}  # fmt: skip
    run_batch(tasks, out_dir / "results.jsonl", BatchOptions(ctx, concurrency, models=models))
    results = _read_jsonl(out_dir / "results.jsonl")
    workspace = Workspace(Path(ctx.workspace).expanduser())
    rows: list[dict[str, Any]] = []
    for problem in problems:
        result = results.get(problem.slug, {})
        source = committed_source(workspace, str(result.get("run_id", "")), problem)
        agent = score(problem, source, runner, limits) if source else None
        passed = bool(agent and agent.passed)
        row: dict[str, Any] = {
            "task_id": problem.task_id,
            "agent_passed": passed,
            "agent_detail": agent.detail if agent else "no committed implementation",
            "agent_status": result.get("status"),
            "attempts": _attempts(workspace, str(result.get("run_id", ""))),
            # Attempts whose code passes check() though the agent did not commit it: the
            # verifier (the model's own tests, the judge) rejected correct code.
            "rejected_correct_attempts": 0
            if passed
            else sum(
                score(problem, code, runner, limits).passed
                for code in attempt_sources(workspace, str(result.get("run_id", "")), problem)
            ),
            "agent_tokens": int((result.get("usage") or {}).get("total_tokens", 0)),
            "agent_seconds": result.get("duration_s"),
        }
        if model is not None:
            row.update({k: v for k, v in baselines[problem.slug].items() if k != "id"})
        rows.append(row)
        if on_progress is not None:
            on_progress(f"{problem.task_id}: agent {row['agent_passed']}"
                        + (f", baseline {row['baseline_passed']}" if model else ""))  # fmt: skip
    summary = _summary(rows, baseline=model is not None)
    (out_dir / "eval.json").write_text(
        json.dumps({"summary": summary, "problems": rows}, indent=2) + "\n", encoding="utf-8"
    )
    return summary


def _read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a results file by id (a later line for an id wins)."""
    if not path.exists():
        return {}
    records = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip())  # fmt: skip
    return {str(r["id"]): r for r in records if isinstance(r, dict) and "id" in r}


def _run_baseline(
    problems: list[Problem],
    model: BaseChatModel,
    path: Path,
    runner: SandboxRunner,
    limits: Limits,
    on_progress: Callable[[str], None] | None,
) -> dict[str, dict[str, Any]]:
    """Single-shot answers scored by the problems' tests; appended to `path` as they finish."""
    done = _read_jsonl(path)
    for problem in problems:
        if problem.slug in done:
            continue
        t0 = time.monotonic()
        code, usage = single_shot(problem, model)
        base = score(problem, code, runner, limits)
        record = {
            "id": problem.slug,
            "baseline_passed": base.passed,
            "baseline_detail": base.detail,
            "baseline_tokens": usage["input_tokens"] + usage["output_tokens"],
            "baseline_seconds": round(time.monotonic() - t0, 2),
        }
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        done[problem.slug] = record
        if on_progress is not None:
            on_progress(f"{problem.task_id}: baseline {base.passed}")
    return done


def _summary(rows: list[dict[str, Any]], *, baseline: bool) -> dict[str, Any]:
    n = len(rows) or 1
    timed = [float(r["agent_seconds"]) for r in rows if r.get("agent_seconds") is not None]
    out: dict[str, Any] = {
        "problems": len(rows),
        "agent_pass@1": round(sum(r["agent_passed"] for r in rows) / n, 4),
        "attempts_per_task": round(sum(r["attempts"] for r in rows) / n, 2),
        "agent_tokens": sum(r["agent_tokens"] for r in rows),
        "agent_seconds_per_task": round(sum(timed) / len(timed), 2) if timed else None,
        # Failed problems where some attempt wrote code that passes check(): the verifier's
        # false rejections (a generator problem otherwise).
        "rejected_correct": [r["task_id"] for r in rows if r["rejected_correct_attempts"]],
    }
    if baseline:
        out.update(
            {
                "baseline_pass@1": round(sum(r["baseline_passed"] for r in rows) / n, 4),
                "baseline_tokens": sum(r["baseline_tokens"] for r in rows),
                "baseline_seconds_per_task": round(sum(r["baseline_seconds"] for r in rows) / n, 2),
                "fixed_by_agent": [
                    r["task_id"] for r in rows if r["agent_passed"] and not r["baseline_passed"]
                ],
                "broken_by_agent": [
                    r["task_id"] for r in rows if r["baseline_passed"] and not r["agent_passed"]
                ],
            }
        )
    return out
