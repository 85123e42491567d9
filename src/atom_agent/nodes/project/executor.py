"""The executor of a run on a project: the target's new definition, chosen among samples.

Each candidate is the model's definition of the step's target spliced into its file
(:mod:`atom_agent.project.edits`). With checks (the target's docstring examples, the task's
examples, else the model's reproduction tests) the candidates are run on them in the run's
checkout, greedy first and warmer samples after, until one passes them all; the best goes to
the attempt's staging area as the edited file. Where no check is the project's own, each
candidate also runs the project's suite (when it is quick), and a candidate that breaks tests
ranks below one that does not. Without any check the first usable candidate that breaks no
test is written: nothing else could tell samples apart. A reply without a usable definition
(no code, another name, a stub body) is no candidate: the next temperature is asked. The
checkout is reset after every trial; the reflector proves the chosen one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from atom_agent.checks.contract import ContractReport
from atom_agent.models.profiles import profile_for
from atom_agent.models.purpose import for_attempt
from atom_agent.models.sampling import sample
from atom_agent.project.additions import placement
from atom_agent.project.documents import documents_for
from atom_agent.project.edits import Edit, EditError, apply_edit, definition_of
from atom_agent.project.repomap import excerpt, render_map, scan
from atom_agent.project.suite import run_suite, suite_limits
from atom_agent.prompts import prompt_text, register
from atom_agent.resources import Resources
from atom_agent.selection.drafts import retry_temperatures, temperatures
from atom_agent.selection.pool import Candidate, Pool
from atom_agent.state import PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of
from atom_agent.workspace import AttemptRef, StepRef, Workspace
from atom_agent.workspace.atomic import atomic_write_json, atomic_write_text

from ..common import plan_of, run_ref, unfinished_attempt
from . import prompts  # noqa: F401  (registers PROJECT_SYSTEM, which both send)
from .common import (
    ProjectRun,
    checks_in_checkout,
    load_project,
    module_of,
    target_of,
)

_EDIT_CONTEXT = """\
{task}

Other files of the project (signatures):
{repo_map}
{documents}
"""
"""What both edit requests open with: the task, the other files' signatures, the documents."""

PROJECT_EDIT = register(
    "PROJECT_EDIT",
    _EDIT_CONTEXT
    + """\
`{qualname}` in `{path}`, with the code around it (line numbers on the left):
{excerpt}
{feedback}
Write the new definition of `{qualname}`: its `def` line exactly as it is and a body that does \
what the task and the docstring say, using the project's own helpers where they fit. Leave the \
docstring out: it is kept as it is. Reply with only that definition{method} in one ```python \
block.""",
)
"""The executor's request for a project step: the target's new definition."""

PROJECT_ADD = register(
    "PROJECT_ADD",
    _EDIT_CONTEXT
    + """\
`{path}` as it is (line numbers on the left); `{qualname}` is not in it yet:
{excerpt}
{feedback}
Write the definition of `{qualname}` to add to `{path}`: its `def` line with the parameters the \
task gives, a one-line docstring, and a body that does what the task says, using the file's \
imports and the project's own helpers where they fit. Reply with only that definition{method} \
in one ```python block.""",
)
"""The executor's request for a project step that adds a definition the file does not have."""

PROJECT_ANEW = register(
    "PROJECT_ANEW",
    """
An earlier version was not accepted:
{why}
Write it anew, so that these hold.
""",
)
"""What a retry of a project step is told: what failed, without the rejected code (shown its
previous version, the model handed it back unchanged in 7 of 7 measured repairs, and in 14 of
14 before: repairs were deleted)."""

MAP_TOKENS = 700
"""Token budget of the other files' signatures in an edit prompt."""
EXCERPT_TOKENS = 2500
"""Token budget of the code around the target."""
SUITE_SECONDS_PER_CANDIDATE = 30.0
"""A step without checks runs the project's suite on each candidate when the baseline run
took at most this long (the reflector's gate runs it once more on the chosen one)."""
CANDIDATES_FILE = "candidates.json"
"""Per attempt: every candidate's temperature, edit error and check results (a record for
people; no node reads it back)."""


@dataclass(frozen=True)
class _Site:
    """Where one attempt's candidates go in the checkout, and what judges them."""

    run_id: str
    project: ProjectRun
    step: PlanStep
    path: str
    """The target's file, relative to the checkout."""
    qualname: str
    original: str
    """The target file as the branch holds it."""
    module: str
    suite_decides: bool
    """Each candidate also runs the project's suite (no check of the step is the task's)."""


def make_project_executor(res: Resources) -> Any:
    """The executor node of a run on a project, closed over the run's resources."""

    def executor(state: State) -> dict[str, Any]:
        step = _current_step(state)
        run = run_ref(res, state)
        project = load_project(res, run)
        if project is None:
            raise RuntimeError("executor: the project was not opened (the planner opens it)")
        step_ref = res.workspace.step(run, step.id)
        attempt = unfinished_attempt(res.workspace, step_ref) or res.workspace.new_attempt(step_ref)
        model = res.model("executor")
        profile = profile_for(model, res.ctx.model_profile)
        project.checkout.reset()
        site = _site_of(state["run_id"], project, step)
        pool = Pool(prove=lambda candidate: _prove(res, site, candidate), distinct=True)
        # Without checks the first usable candidate is taken (nothing tells samples apart);
        # the warmer ones are asked only when a reply gave no usable definition.
        ladder = temperatures(profile.warming, attempt.n)
        # The previous attempt's choice stays a candidate: a retry replaces it only with code
        # that does better on the checks, and the model is shown it with what failed.
        incumbent, feedback = _previous(res.workspace, step_ref, attempt, site.path)
        if incumbent is not None and step.checks:
            pool.offer(incumbent, origin="earlier", informed=True)
        messages = edit_request(site.project.checkout.root, state["task"], step, feedback)
        ladder = [] if pool.met else retry_temperatures(ladder, bool(feedback and incumbent))
        with for_attempt(step.id, attempt.n):
            spent = _sample_candidates(model, site, pool, messages, ladder)
        _stage_pool_choice(site, attempt, pool)
        res.workspace.write_history(attempt, [*messages, *spent], memories=state.get("rules"))
        emit(
            "executor.done",
            run_id=state["run_id"],
            step_id=step.id,
            attempt=attempt.n,
            candidates=len(pool.candidates),
            written=pool.best is not None,
        )
        return {
            "attempts": {step.id: attempt.n},
            "usage": usage_of(spent, model_name_of(model)),
            "question": None,
            "used_memories": [],
            "used_memory_reasons": {},
        }

    return executor


def _current_step(state: State) -> PlanStep:
    """The plan's step the state says is current (an unknown one is a programming error)."""
    step = next((s for s in plan_of(state).steps if s.id == state.get("current_step")), None)
    if step is None:
        raise RuntimeError(f"executor: current step {state.get('current_step')!r} is unknown")
    return step


def _site_of(run_id: str, project: ProjectRun, step: PlanStep) -> _Site:
    """The step's target in the checkout: its file, its definition's name, its module."""
    path, _, qualname = step.target.partition("::")
    return _Site(
        run_id=run_id,
        project=project,
        step=step,
        path=path,
        qualname=qualname,
        original=(project.checkout.root / path).read_text(encoding="utf-8"),
        module=module_of(path, project.command.python_path),
        # The model's reproduction tests alone do not outrank the project's suite: each
        # candidate also runs it (when cheap), as a step without checks does.
        suite_decides=not any(c.origin == "task" for c in step.checks),
    )


def _sample_candidates(
    model: BaseChatModel, site: _Site, pool: Pool, messages: list[BaseMessage], ladder: list[float]
) -> list[BaseMessage]:
    """Ask `messages` at each temperature in turn, offering each reply, until one passes all.

    Returns the replies.
    """
    spent: list[BaseMessage] = []
    for temperature in ladder:
        reply = sample(model, messages, temperature, purpose="project_edit", code_only="code")
        spent.append(reply)
        candidate = _offer_reply(site, pool, temperature, str(reply.content))
        if pool.passes(candidate):
            break
    return spent


def _offer_reply(site: _Site, pool: Pool, temperature: float, reply: str) -> Candidate:
    """Offer the file with the reply's definition spliced in (no code: why it is none)."""
    try:
        edited = apply_edit(site.original, Edit(site.qualname, definition_of(reply, site.qualname)))
    except EditError as exc:
        return pool.offer("", origin="project_edit", temperature=temperature, note=str(exc))
    candidate = pool.offer(edited, origin="project_edit", temperature=temperature)
    if candidate.same_as is None:
        emit(
            "executor.candidate",
            run_id=site.run_id,
            step_id=site.step.id,
            temperature=temperature,
            checks=_checks_said(candidate),
        )
    return candidate


def _prove(res: Resources, site: _Site, candidate: Candidate) -> None:
    """Run the step's checks on a candidate in the checkout, and the suite when it decides.

    The previous attempt's choice runs the checks alone (its suite ran at that attempt's gate).
    """
    candidate.report = _try(res, site, candidate.source)
    if site.suite_decides and candidate.origin != "earlier":
        candidate.broken = _broken(res, site, candidate.source)


def _checks_said(candidate: Candidate) -> str:
    """What the checks and the suite said of a candidate, for the record."""
    report, broken = candidate.report, candidate.broken
    return (report.summary() if report is not None else "no checks") + (
        f"; {broken} test(s) that passed before fail" if broken is not None else ""
    )


def _record(candidate: Candidate) -> dict[str, Any]:
    """One candidate as candidates.json shows it."""
    if candidate.origin == "earlier":
        return {"incumbent": True, "checks": _checks_said(candidate)}
    said = (
        {"checks": candidate.note}
        if candidate.same_as is not None
        else {"error": candidate.note}
        if not candidate.source
        else {"checks": _checks_said(candidate)}
    )
    return {"temperature": candidate.temperature, **said}


def _stage_pool_choice(site: _Site, attempt: AttemptRef, pool: Pool) -> None:
    """Reset the checkout; stage what the pool keeps and write the record of every candidate."""
    site.project.checkout.reset()
    best = pool.best
    if best is not None:
        atomic_write_text(attempt.staging / site.path, best.source)
    atomic_write_json(
        attempt.path / CANDIDATES_FILE,
        {"candidates": [_record(c) for c in pool.candidates], "kept": pool.why(),
         "yield": {origin: asdict(y) for origin, y in pool.yields().items()}},
    )  # fmt: skip


def edit_request(root: Path, task: str, step: PlanStep, feedback: str = "") -> list[BaseMessage]:
    """The edit request for the project at `root`.

    The task, the other files' signatures, the documents the task names, the target's code,
    and what the previous attempt's verdict said failed (without its code).
    """
    path, _, qualname = step.target.partition("::")
    defs = scan(root)
    target = target_of(defs, step)
    if target is None:  # a definition the step adds: the file it goes in is the context
        around = placement(root, path, budget_tokens=EXCERPT_TOKENS)
    else:
        around = excerpt(root, target, budget_tokens=EXCERPT_TOKENS)
    others = [d for d in defs if not d.test and d.path != path]
    text = prompt_text("PROJECT_EDIT" if target is not None else "PROJECT_ADD").format(
        task=task,
        repo_map=render_map(others, budget_tokens=MAP_TOKENS, focus=[qualname]) or "(none)",
        qualname=qualname,
        path=path,
        excerpt=around,
        documents=documents_for(root, task, qualname),
        feedback=prompt_text("PROJECT_ANEW").format(why=feedback) if feedback else "",
        method=" (the method alone, indented as at the top level)" if "." in qualname else "",
    )
    return [SystemMessage(prompt_text("PROJECT_SYSTEM")), HumanMessage(text)]


def _try(res: Resources, site: _Site, edited: str) -> ContractReport | None:
    """The step's checks run on `edited` in the checkout (None without checks)."""
    if not site.step.checks:
        return None
    (site.project.checkout.root / site.path).write_text(edited, encoding="utf-8")
    return checks_in_checkout(res, site.project, site.step.checks, site.module)


def _broken(res: Resources, site: _Site, edited: str) -> int | None:
    """How many tests that passed in the baseline do not pass with `edited` (None: not run).

    For a step without checks the project's suite is what tells candidates apart; it is run
    here only when the baseline took at most :data:`SUITE_SECONDS_PER_CANDIDATE`. A suite
    that no longer collects counts every test it passed before.
    """
    project = site.project
    baseline = project.baseline
    if baseline.seconds > SUITE_SECONDS_PER_CANDIDATE or not baseline.passed:
        return None
    (project.checkout.root / site.path).write_text(edited, encoding="utf-8")
    try:
        after = run_suite(
            project.checkout.root,
            project.command,
            runner=res.runner.with_packages(project.packages),
            limits=suite_limits(res.limits),
        )
    finally:
        project.checkout.reset()
    if baseline.collected_ok and not after.collected_ok:
        return len(baseline.passed)
    return len(baseline.passed - after.passed - after.skipped)


def _previous(
    workspace: Workspace, step_ref: StepRef, attempt: AttemptRef, path: str
) -> tuple[str | None, str]:
    """The file the previous attempt chose, and what its verdict said to change.

    (None, '') on the first attempt; None for a previous attempt that wrote no file.
    """
    earlier = [a for a in workspace.list_attempts(step_ref) if a.n < attempt.n]
    if not earlier:
        return None, ""
    last = earlier[-1]
    staged = last.staging / path
    chosen = staged.read_text(encoding="utf-8") if staged.is_file() else None
    said = workspace.read_verdict(last).get("feedback") if last.verdict_json.exists() else ""
    return chosen, str(said or "")[:1500]
