"""`atom-agent eval humaneval`: the agent and a single-shot baseline, scored by the tests."""

from __future__ import annotations

import functools
import json
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from atom_agent.batch import BatchOptions, run_batch
from atom_agent.context import Context
from atom_agent.errors import WorkspaceError
from atom_agent.evals.humaneval import Problem, score, single_shot, task_text, warming
from atom_agent.models.replay import ReplayCache
from atom_agent.resources import Models, Resources
from atom_agent.sandbox import Limits, SandboxRunner, default_runner
from atom_agent.state import IMPL_FILE
from atom_agent.workspace import StepRef, Workspace
from atom_agent.workspace.deliverable import PLAIN_MODULE, result_dir

logger = logging.getLogger(__name__)


def committed_source(workspace: Workspace, run_id: str, problem: Problem) -> str | None:
    """The code a run hands back that defines the entry point.

    The last committed step's impl.py, else the model's plain answer result/ holds, unverified:
    what the user gets, and what the devtasks oracle reads too.
    """
    try:
        run = workspace.run(run_id)
    except WorkspaceError:  # a task that crashed before creating its run
        return None
    found: str | None = None
    for step in workspace.list_steps(run):
        impl = step.artifacts / IMPL_FILE
        if impl.is_file():
            text = impl.read_text(encoding="utf-8", errors="replace")
            if f"def {problem.entry_point}" in text:
                found = text
    plain = result_dir(run) / f"{PLAIN_MODULE}.py"
    if found is None and plain.is_file():
        text = plain.read_text(encoding="utf-8", errors="replace")
        found = text if f"def {problem.entry_point}" in text else None
    return found


def _steps(workspace: Workspace, run_id: str) -> list[StepRef]:
    """The steps of run `run_id` ([] for a task that crashed before creating its run)."""
    try:
        return workspace.list_steps(workspace.run(run_id))
    except WorkspaceError:
        return []


def attempt_sources(workspace: Workspace, steps: list[StepRef], problem: Problem) -> list[str]:
    """Every attempt's staged impl.py that defines the entry point, in the order written.

    A commit copies its staging, so this is every attempt the verifier saw.
    """
    sources: list[str] = []
    for step in steps:
        for attempt in workspace.list_attempts(step):
            impl = attempt.staging / IMPL_FILE
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
    warm: bool = True,
    concurrency: int = 1,
    on_progress: Callable[[str], None] | None = None,
    cache: str | None = None,
) -> dict[str, Any]:
    """Run the agent, the single-shot and the warming baselines on `problems`.

    Every arm uses the same model and is scored by the problem's own ``check()``; returns the
    summary and writes ``eval.json``. Each arm resumes from its own file.
    """
    runner = default_runner()
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
    replay = ReplayCache(cache) if cache else None
    try:
        with Resources(ctx, models=models, runner=runner, cache=replay) as resources:
            summary = _evaluate(problems, resources, out_dir, tasks, baseline, warm, concurrency,
                                limits, on_progress)  # fmt: skip
    finally:
        if replay is not None:
            replay.close()
    if replay is not None:  # how much of this invocation was a replay
        summary["model_calls"] = replay.counts()
    return summary


def _evaluate(
    problems: list[Problem],
    resources: Resources,
    out_dir: Path,
    tasks: Path,
    baseline: bool,
    warm: bool,
    concurrency: int,
    limits: Limits,
    on_progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """Every arm on one Resources: the baselines and the agent use the same loaded model."""
    ctx, runner = resources.ctx, resources.runner
    model = resources.model("executor") if baseline or warm else None
    baselines: dict[str, dict[str, Any]] = {}
    warmed: dict[str, dict[str, Any]] = {}
    if model is not None and baseline:
        single = functools.partial(_single_shot, model)
        baselines = _run_arm(
            "baseline", problems, out_dir / "baseline.jsonl", single, runner, limits, on_progress
        )
    if model is not None and warm:
        warms = functools.partial(_warming, model, runner, limits)
        warmed = _run_arm(
            "warming", problems, out_dir / "warming.jsonl", warms, runner, limits, on_progress
        )
    # Problems are independent: one problem's lessons must not reach another's prompt.
    options = BatchOptions(ctx, concurrency, isolated_memory=True, resources=resources)
    run_batch(tasks, out_dir / "results.jsonl", options)
    results = _read_jsonl(out_dir / "results.jsonl")
    workspace = Workspace(Path(ctx.workspace).expanduser())
    rows: list[dict[str, Any]] = []
    for problem in problems:
        row = _agent_row(problem, results.get(problem.slug, {}), workspace, runner, limits)
        if baselines:
            row.update({k: v for k, v in baselines[problem.slug].items() if k != "id"})
        if warmed:
            row.update({k: v for k, v in warmed[problem.slug].items() if k != "id"})
        rows.append(row)
        if on_progress is not None:
            on_progress(f"{problem.task_id}: agent {row['agent_passed']}"
                        + (f", single-shot {row['baseline_passed']}" if baselines else "")
                        + (f", warming {row['warming_passed']}" if warmed else ""))  # fmt: skip
    summary = _summary(rows, baseline=bool(baselines), warm=bool(warmed))
    (out_dir / "eval.json").write_text(
        json.dumps({"summary": summary, "problems": rows}, indent=2) + "\n", encoding="utf-8"
    )
    return summary


def _agent_row(
    problem: Problem,
    result: dict[str, Any],
    workspace: Workspace,
    runner: SandboxRunner,
    limits: Limits,
) -> dict[str, Any]:
    """A problem's agent columns: its committed code scored, attempts, tokens, what was wrong."""
    source = committed_source(workspace, str(result.get("run_id", "")), problem)
    steps = _steps(workspace, str(result.get("run_id", "")))
    agent = score(problem, source, runner, limits) if source else None
    passed = bool(agent and agent.passed)
    row: dict[str, Any] = {
        "task_id": problem.task_id,
        "agent_passed": passed,
        "agent_detail": agent.detail if agent else "no committed implementation",
        "agent_status": result.get("status"),
        "attempts": sum(len(workspace.list_attempts(step)) for step in steps),
        # Attempts whose code passes check() though the agent did not commit it: the
        # verifier (the model's own tests) rejected correct code.
        "rejected_correct_attempts": 0
        if passed
        else sum(
            score(problem, code, runner, limits).passed
            for code in attempt_sources(workspace, steps, problem)
        ),
        "agent_tokens": int((result.get("usage") or {}).get("total_tokens", 0)),
        "agent_seconds": result.get("duration_s"),
        "first_draft_passed": first_draft_passed(workspace, steps),
    }
    # Committed code that fails check(): the verifier accepted wrong code.
    row["accepted_wrong"] = bool(source) and not passed
    return row


def _read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """The records of a results file by id (a later line for an id wins)."""
    if not path.exists():
        return {}
    records = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip())  # fmt: skip
    return {str(r["id"]): r for r in records if isinstance(r, dict) and "id" in r}


def _run_arm(
    arm: str,
    problems: list[Problem],
    path: Path,
    solve: Callable[[Problem], tuple[str, int, dict[str, Any]]],
    runner: SandboxRunner,
    limits: Limits,
    on_progress: Callable[[str], None] | None,
) -> dict[str, dict[str, Any]]:
    """One baseline arm: `solve` each problem (code, tokens, extras), score it by its tests.

    Records are appended to `path` as they finish, so a re-run skips what is scored.
    """
    done = _read_jsonl(path)
    for problem in problems:
        if problem.slug in done:
            continue
        t0 = time.monotonic()
        code, tokens, extra = solve(problem)
        result = score(problem, code, runner, limits)
        record = {
            "id": problem.slug,
            f"{arm}_passed": result.passed,
            f"{arm}_detail": result.detail,
            f"{arm}_tokens": tokens,
            f"{arm}_seconds": round(time.monotonic() - t0, 2),
            **extra,
        }
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        done[problem.slug] = record
        if on_progress is not None:
            on_progress(f"{problem.task_id}: {arm} {result.passed}")
    return done


def _single_shot(model: BaseChatModel, problem: Problem) -> tuple[str, int, dict[str, Any]]:
    code, usage = single_shot(problem, model)
    return code, usage["input_tokens"] + usage["output_tokens"], {}


def _warming(
    model: BaseChatModel, runner: SandboxRunner, limits: Limits, problem: Problem
) -> tuple[str, int, dict[str, Any]]:
    warmed = warming(problem, model, runner, limits)
    tokens = warmed.input_tokens + warmed.output_tokens
    return warmed.code, tokens, {"warming_samples": warmed.samples}


def _summary(rows: list[dict[str, Any]], *, baseline: bool, warm: bool) -> dict[str, Any]:
    out = _arm_summary(rows, baseline=baseline, warm=warm)
    if len(rows) > 20:
        # Problems in blocks of 20 (HumanEval/0-19, 20-39, …): later ones are harder.
        out["slices"] = {
            f"{rows[i]['task_id']}..{rows[min(i + 19, len(rows) - 1)]['task_id']}": _arm_summary(
                rows[i : i + 20], baseline=baseline, warm=warm, brief=True
            )
            for i in range(0, len(rows), 20)
        }
    return out


def _arm_summary(
    rows: list[dict[str, Any]], *, baseline: bool, warm: bool, brief: bool = False
) -> dict[str, Any]:
    n = len(rows) or 1
    out: dict[str, Any] = {"problems": len(rows)}
    arms = [("agent", "agent")]
    if baseline:
        arms.append(("single_shot", "baseline"))
    if warm:
        arms.append(("warming", "warming"))
    for name, key in arms:
        timed = [float(r[f"{key}_seconds"]) for r in rows if r.get(f"{key}_seconds") is not None]
        out[f"{name}_pass@1"] = round(sum(bool(r[f"{key}_passed"]) for r in rows) / n, 4)
        if brief:
            continue
        out[f"{name}_tokens_per_task"] = round(sum(r[f"{key}_tokens"] for r in rows) / n, 1)
        out[f"{name}_seconds_per_task"] = round(sum(timed) / len(timed), 2) if timed else None
        out[f"{name}_median_seconds"] = round(statistics.median(timed), 2) if timed else None
    if brief:
        return out
    out["attempts_per_task"] = round(sum(r["attempts"] for r in rows) / n, 2)
    # Failed problems where some attempt wrote code that passes check(): the verifier's
    # false rejections (a generator problem otherwise); and wrong code it committed.
    out["rejected_correct"] = [r["task_id"] for r in rows if r["rejected_correct_attempts"]]
    out["accepted_wrong"] = [r["task_id"] for r in rows if r.get("accepted_wrong")]
    first = [r for r in rows if r.get("first_draft_passed")]
    out["first_draft_passed"] = len(first)
    if baseline and first:
        agent = sum(r["agent_tokens"] for r in first)
        single = sum(r["baseline_tokens"] for r in first) or 1
        out["first_draft_tokens_vs_single_shot"] = round(agent / single, 2)
    if baseline:
        out["fixed_by_agent"] = [
            r["task_id"] for r in rows if r["agent_passed"] and not r["baseline_passed"]
        ]
        out["broken_by_agent"] = [
            r["task_id"] for r in rows if r["baseline_passed"] and not r["agent_passed"]
        ]
        med_agent, med_single = out["agent_median_seconds"], out["single_shot_median_seconds"]
        if med_agent and med_single:
            out["median_seconds_vs_single_shot"] = round(med_agent / med_single, 2)
    return out


def first_draft_passed(workspace: Workspace, steps: list[StepRef]) -> bool:
    """Whether the run's first attempt's first draft passed its contract (drafts.json)."""
    for step in steps:
        attempts = workspace.list_attempts(step)
        if not attempts:
            continue
        record = attempts[0].path / "drafts.json"
        if not record.is_file():
            return False
        try:
            candidates = json.loads(record.read_text(encoding="utf-8")).get("candidates") or []
        except (OSError, ValueError):
            return False
        return bool(candidates) and bool(candidates[0].get("passed"))
    return False
