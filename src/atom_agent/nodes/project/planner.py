"""The planner of a run on a project: checkout, baseline suite, targets located, checks written."""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from atom_agent.checks.contract import ContractReport
from atom_agent.models.purpose import calling, for_attempt
from atom_agent.models.sampling import sample
from atom_agent.project.additions import new_definitions, placement
from atom_agent.project.checkout import open_checkout
from atom_agent.project.checks import (
    docstring_checks,
    missing,
    project_examples,
    reached,
    reproducing,
    runnable_on_baseline,
    unmutated_checks,
)
from atom_agent.project.environment import dependencies
from atom_agent.project.instances import MAX_BASELINE_SECONDS, instance_origins
from atom_agent.project.knowledge import (
    baseline_key,
    keep_baseline,
    known_baseline,
    project_space,
)
from atom_agent.project.repomap import Definition, excerpt, find, mentioned, render_map, scan
from atom_agent.project.reproduction import (
    again_prompt,
    chosen,
    reproduction_checks,
    reproduction_prompt,
    stopped_before,
    usages_in_tests,
)
from atom_agent.project.suite import run_suite, suite_limits
from atom_agent.project.suite_command import detect
from atom_agent.prompts import prompt_text, register
from atom_agent.replies import extract_code
from atom_agent.resources import Resources
from atom_agent.session import SessionContext
from atom_agent.state import Check, Clause, Plan, PlanStep, State
from atom_agent.telemetry import emit
from atom_agent.usage import model_name_of, usage_of
from atom_agent.verification.clauses import task_clauses

from ..common import run_ref
from ..planner import accept_plan
from . import prompts  # noqa: F401  (registers PROJECT_SYSTEM, which both send)
from .common import (
    ProjectRun,
    checks_in_checkout,
    load_project,
    module_of,
    save_project,
)

PROJECT_LOCATE = register(
    "PROJECT_LOCATE",
    """\
{task}

The project's files and definitions:
{repo_map}
{notes}
Which existing functions or methods must be written or changed for this task? Answer with one \
line per definition, `path/to/file.py::Name` or `path/to/file.py::Class.method`, nothing else.""",
)
"""Localisation when the task names no definition of the project."""

PROJECT_NOTES = register(
    "PROJECT_NOTES",
    """
What earlier runs on this project found:
{notes}
""",
)
"""Recalled long-term memories of the project, in the localisation prompt."""

MAP_TOKENS = 1500
"""Token budget of the repository map in the localisation prompt."""
CONTRACT_EXCERPT_TOKENS = 1500
"""Token budget of the code around the target in the reproduction-test request."""

_TARGET_LINE = re.compile(r"([\w./-]+\.py)::([A-Za-z_][\w.]*)")


def make_project_planner(res: Resources) -> Any:
    """The planner node of a run on a project, closed over the run's resources."""

    def planner(state: State) -> dict[str, Any]:
        run = run_ref(res, state)
        project = load_project(res, run) or _open(res, state)
        defs = scan(project.checkout.root)
        named = [d for d in mentioned(state["task"], defs) if d.kind != "class"]
        added = new_definitions(state["task"], defs, project.checkout.root)
        # Named stubs and new names are what the task asks to write; other names it gives are
        # context.
        targets = [d for d in named if d.stub] + added or named
        spent: list[BaseMessage] = []
        if not targets:
            targets, spent = _locate(res, state["run_id"], state["task"], defs)
        model = res.model("planner")
        usage = usage_of(spent, model_name_of(model))
        if not targets:
            return {
                "status": "failed",
                "usage": usage,
                "stop_reason": "could not tell which code of the project to change: name the "
                "function, method or file in the task",
            }
        names = [d.qualname.split(".")[-1] for d in targets]
        clauses = task_clauses(state["task"], names=names)
        steps: list[PlanStep] = []
        for n, d in enumerate(targets, 1):
            step, replies = _step(res, project, state["task"], d, n)
            steps.append(step)
            spent += replies
        usage = usage_of(spent, model_name_of(model))
        plan = Plan(
            steps=[_attributed(step, clauses) for step in steps],
            rationale="one step per definition the task names, in the order it names them",
            clauses=clauses,
        )
        return accept_plan(res, state, run, plan, "initial plan: the task's targets", usage)

    return planner


def _open(res: Resources, state: State) -> ProjectRun:
    """The run's checkout of the project and its suite's baseline, made once per run."""
    run = run_ref(res, state)
    checkout = open_checkout(res.ctx.repo, run.path / "project", state["run_id"])
    checkout.reset()
    given = res.ctx.test_command or task_test_command(state["task"])
    command = detect(checkout.root, python=res.runner.python, given=given)
    emit("project.baseline", run_id=state["run_id"], command=" ".join(command.argv))
    deps = dependencies(checkout.root)
    runner = res.runner.with_packages(deps.installed)
    space = project_space(res.ctx.project_id, res.ctx.repo)
    key = baseline_key(checkout, command, deps.installed)
    baseline = known_baseline(res.workspace.root, space, key)
    reused = baseline is not None
    if baseline is None:
        baseline = run_suite(checkout.root, command, runner=runner, limits=suite_limits(res.limits))
        checkout.reset()  # whatever the tests wrote goes
        keep_baseline(res.workspace.root, space, key, baseline)
    else:
        emit("project.baseline_reused", run_id=state["run_id"], key=key)
    project = ProjectRun(checkout, command, baseline, deps.installed, deps.missing, reused)
    save_project(res, run, project)
    emit(
        "project.ready",
        run_id=state["run_id"],
        branch=checkout.branch,
        passed=len(baseline.passed),
        failed=len(baseline.failed),
    )
    return project


_TEST_COMMAND = re.compile(
    r"`((?:PYTHONPATH=\S+\s+)?(?:python\d?(?:\.\d+)? -m pytest|pytest)\s[^`]+)`"
)


def task_test_command(task: str) -> str:
    """A test command the task spells out in backticks (``python -m pytest -W … tests``), or ''."""
    found = _TEST_COMMAND.search(task)
    return found.group(1).strip() if found else ""


def _locate(
    res: Resources, run_id: str, task: str, defs: list[Definition]
) -> tuple[list[Definition], list[BaseMessage]]:
    """The definitions the planner model names for a task that names none of the project's."""
    model = res.model("planner")
    repo_map = render_map([d for d in defs if not d.test], budget_tokens=MAP_TOKENS)
    space = project_space(res.ctx.project_id, res.ctx.repo)
    session = SessionContext(session_id=run_id, project_id=space, run_id=run_id)
    notes = [r.content for r in res.memory.recall(session, task, type="discovery", limit=5)]
    learned = (
        prompt_text("PROJECT_NOTES").format(notes="\n".join(f"- {n}" for n in notes))
        if notes
        else ""
    )
    messages: list[BaseMessage] = [
        SystemMessage(prompt_text("PROJECT_SYSTEM")),
        HumanMessage(
            prompt_text("PROJECT_LOCATE").format(task=task, repo_map=repo_map, notes=learned)
        ),
    ]
    with calling("project_plan"):
        reply = model.invoke(messages)
    found: list[Definition] = []
    for path, qualname in _TARGET_LINE.findall(str(reply.content)):
        hits = [d for d in find(defs, qualname) if d.path == path and not d.test]
        for d in hits[:1]:
            if d not in found and d.kind != "class":
                found.append(d)
    return found, [reply] if hasattr(reply, "usage_metadata") else []


def _step(
    res: Resources, project: ProjectRun, task: str, target: Definition, n: int
) -> tuple[PlanStep, list[BaseMessage]]:
    """The step that rewrites `target`, with its checks, and the model's replies it cost.

    Its docstring's examples and the task's, and the project's documented examples that fail
    inside it as it is (:func:`~atom_agent.project.checks.reproducing`). When none of those
    can run, the planner model writes reproduction tests (:mod:`atom_agent.project.reproduction`),
    kept where they fail inside the target as it is.
    """
    module = module_of(target.path, project.command.python_path)
    name = target.qualname.split(".")[-1]
    doc, params = _doc_and_parameters(project, target)
    checks = docstring_checks(doc)
    clauses = task_clauses(task, names=[name])
    checks += [c for cl in clauses for c in unmutated_checks(cl.text, name, params, checks)]
    checks += [c for cl in clauses for c in cl.checks if c.call]
    checks = list({c.describe(): c for c in checks}.values())
    own = {k.describe() for k in checks}
    examples = [
        c
        for c in project_examples(project.checkout.root, target.path, target.qualname)
        if c.describe() not in own
    ]
    if checks or examples:
        baseline = checks_in_checkout(res, project, [*checks, *examples], module)
        mine = ContractReport(baseline.results[: len(checks)], baseline.error)
        found = ContractReport(baseline.results[len(checks) :], baseline.error)
        reproduced = reproducing(examples, found, target.qualname)
        adds = target.qualname if target.new else ""
        checks = runnable_on_baseline(checks, mine, adds=adds) + reproduced
        emit("project.examples", target=target.qualname, tried=len(examples), kept=len(reproduced))
    spent: list[BaseMessage] = []
    slug = re.sub(r"[^a-z0-9]+", "-", target.qualname.lower()).strip("-")[:36] or "change"
    step_id = f"{n}-{slug}"[:40]
    if not checks:
        checks, spent = _reproduction(res, project, task, target, module, step_id)
    return PlanStep(
        id=step_id,
        title=f"{target.qualname} in {target.path}" + (" (new)" if target.new else ""),
        description=task,
        acceptance_criteria=[
            f"{target.qualname} does what the task and its docstring say",
            "every test of the project that passed before still passes",
        ],
        defines=[name],
        expected_files=[target.path],
        checks=[
            c if c.origin == "planner" else c.model_copy(update={"origin": "task"}) for c in checks
        ],
        target=f"{target.path}::{target.qualname}",
    ), spent


def _reproduction(
    res: Resources, project: ProjectRun, task: str, target: Definition, module: str, step_id: str
) -> tuple[list[Check], list[BaseMessage]]:
    """The planner model's reproduction tests of `target` that fail inside it as it is.

    Each request is attempt 1 of step `step_id` in its call's metadata; asked again, 2.
    """
    model = res.model("planner")
    around = _around(project, target)
    prompt = reproduction_prompt(
        task, target.qualname, target.path, around, _origins(res, project, target, module)
    )
    replies: list[BaseMessage] = []
    kept: list[Check] = []
    again = ""
    for n in (1, 2):
        messages = [SystemMessage(prompt_text("PROJECT_SYSTEM")), HumanMessage(prompt + again)]
        source = "PROJECT_CONTRACT_AGAIN" if again else "PROJECT_CONTRACT"
        with for_attempt(step_id, n):
            reply = sample(model, messages, 0.0, purpose="reproduction", source=source,
                           code_only="tests")  # fmt: skip
        replies.append(reply)
        groups = reproduction_checks(extract_code(str(reply.content), tests=True))
        written = [c for group in groups for c in group]
        if not written:
            emit("project.reproduction", target=target.qualname, written=0, kept=0)
            break
        baseline = checks_in_checkout(res, project, written, module)
        # A new definition's tests reproduce by stopping where its name is missing.
        hit = (missing if target.new else reached)(written, baseline, target.qualname)
        kept = chosen(groups, {c.describe() for c in hit})
        emit("project.reproduction", target=target.qualname, written=len(written), kept=len(kept))
        stopped = [] if target.new else stopped_before(baseline, target.qualname)
        if kept or not stopped:
            break
        # None reached the target: asked once more, told what stopped each test and how the
        # project's tests make the call (Agentless regenerates reproduction tests until they
        # reproduce; one more is what we can afford).
        tests = [d.path for d in scan(project.checkout.root) if d.test]
        usages = usages_in_tests(project.checkout.root, set(tests), target.qualname.split(".")[-1])
        again = again_prompt(target.qualname, target.signature, stopped, usages)
    return [c.model_copy(update={"origin": "planner"}) for c in kept], replies


def _origins(res: Resources, project: ProjectRun, target: Definition, module: str) -> list[str]:
    """How the project's tests get an object of a method's class.

    [] for a function, or when the baseline suite is too slow to run once more for it.
    """
    cls = target.qualname.rpartition(".")[0]
    if not cls or project.baseline.seconds > MAX_BASELINE_SECONDS:
        return []
    origins = instance_origins(
        project.checkout.root,
        project.command,
        module,
        cls,
        runner=res.runner.with_packages(project.packages),
        limits=suite_limits(res.limits),
    )
    emit("project.instances", target=target.qualname, lines=len(origins))
    return origins


def _attributed(step: PlanStep, clauses: list[Clause]) -> PlanStep:
    """`step` with each check naming the clause it executes.

    A check the task's clauses gave keeps its clause; the docstring's examples become a
    clause of their own ("the examples in the docstring of X"), and so do the project's
    documented examples that run the target and the model's reproduction tests, so coverage
    counts them.
    """
    by_check = {c.describe(): cl.id for cl in clauses for c in cl.checks}
    by_text = {cl.text: cl.id for cl in clauses}
    by_check |= {c.describe(): by_text[c.criterion] for c in step.checks if c.criterion in by_text}
    qualname = step.target.partition("::")[2]
    loose = [c for c in step.checks if c.describe() not in by_check]
    own = [c for c in loose if c.criterion.startswith("docstring")]
    written = [c for c in loose if c.origin == "planner"]
    documented = [c for c in loose if c not in own and c not in written]
    groups = [
        (f"the examples in the docstring of {qualname}", own),
        (
            f"the project's documented examples that run {qualname} ("
            + ", ".join(sorted({c.criterion.split(":")[0] for c in documented}))
            + ")",
            documented,
        ),
        (f"the model's reproduction tests of {qualname} (written from the task)", written),
    ]
    for text, group in groups:
        if not group:
            continue
        clause_id = f"c{len(clauses) + 1}"
        clauses.append(
            Clause(
                id=clause_id,
                text=text,
                kind="example",
                checks=[c.model_copy(update={"clause": clause_id}) for c in group],
            )
        )
        by_check |= {c.describe(): clause_id for c in group}
    checks = [c.model_copy(update={"clause": by_check.get(c.describe(), "")}) for c in step.checks]
    return step.model_copy(update={"checks": checks})


def _around(project: ProjectRun, target: Definition) -> str:
    """The code the model sees around the target (for a new one, the file it goes in)."""
    root = project.checkout.root
    if target.new:
        return placement(root, target.path, budget_tokens=CONTRACT_EXCERPT_TOKENS)
    return excerpt(root, target, budget_tokens=CONTRACT_EXCERPT_TOKENS)


def _doc_and_parameters(project: ProjectRun, target: Definition) -> tuple[str, list[str]]:
    """The target's docstring and parameter names in order (``self`` included for a method).

    A new definition has no docstring yet; its parameters are the ones the task gave.
    """
    text = (project.checkout.root / target.path).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    source = "\n".join(lines[target.lineno - 1 : target.end_lineno])
    if target.new:
        source = f"{target.signature or 'def _()'}:\n    pass\n"
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return "", []
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return "", []
    args = node.args
    return ast.get_docstring(node) or "", [
        a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
    ]
