"""`atom-agent run "TASK"` and `atom-agent resume RUN_ID`: run a task with live progress."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from atom_agent.context import Context
from atom_agent.errors import ConfigError

from .progress import Progress

if TYPE_CHECKING:  # the handlers load the run's machinery: `--help` and bad options need none
    from atom_agent.run import RunOutcome

EXIT_CODES = {"done": 0, "failed": 1, "interrupted": 3, "budget_exhausted": 4}


def context_from_args(args: argparse.Namespace) -> Context:
    """Context.from_env() with the command-line options on top."""
    overrides: dict[str, Any] = {}
    for option, field_name in (
        ("model", "model"),
        ("model_profile", "model_profile"),
        ("base_url", "base_url"),
        ("workspace", "workspace"),
        ("project", "project_id"),
        ("max_attempts", "max_attempts"),
        ("max_tool_calls", "max_tool_calls"),
        ("max_tokens", "max_tokens"),
        ("max_cost", "max_cost_usd"),
        ("max_seconds", "max_wall_seconds"),
        ("repo", "repo"),
        ("test_command", "test_command"),
    ):
        value = getattr(args, option, None)
        if value is not None:
            overrides[field_name] = str(Path(value).resolve()) if option == "repo" else value
    for role in ("executor", "planner"):
        path = getattr(args, f"{role}_prompt", None)
        if path is not None:
            overrides[f"{role}_prompt"] = _prompt_file(path, f"--{role}-prompt")
    replaced: dict[str, str] = {}
    for given in getattr(args, "prompt", None) or []:
        name, sep, path = given.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--prompt: {given!r} is not NAME=FILE (e.g. PLANNER_SYSTEM=my.txt)")
        replaced[name.strip()] = _prompt_file(path.strip(), f"--prompt {name.strip()}")
    if replaced:
        overrides["prompts"] = replaced
    if getattr(args, "approve_plan", False):
        overrides["approve_plan"] = True
    if overrides.get("model_profile") == "auto":
        overrides["model_profile"] = ""
    return Context.from_env(**overrides)


def _prompt_file(path: str, option: str) -> str:
    """The text of a prompt file given on the command line.

    Raises:
        ConfigError: it cannot be read, or it is empty.
    """
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{option}: cannot read {path!r}: {exc}") from None
    if not text.strip():
        raise ConfigError(f"{option}: {path!r} is empty; leave the option out for the built-in")
    return text


def model_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--model-profile`` and ``--base-url``: which model, and how it is used."""
    parser.add_argument("--model", help="provider:model or 'local' for every role")
    parser.add_argument(
        "--model-profile",
        choices=("small", "standard", "auto"),
        help="small: whole-file drafts, no tool loop; standard: the ReAct tool loop; "
        "auto (default): by the size the model's name states (<= 8B is small)",
    )
    parser.add_argument(
        "--prompt",
        action="append",
        metavar="NAME=FILE",
        help="replace the named prompt with the text of FILE (repeatable; the names and the "
        "profiles that send each: docs/prompts.md)",
    )
    parser.add_argument(
        "--executor-prompt",
        metavar="FILE",
        help="same as --prompt EXECUTOR_SYSTEM=FILE ({ambiguity} in it becomes the line on "
        "questions)",
    )
    parser.add_argument(
        "--planner-prompt",
        metavar="FILE",
        help="same as --prompt PLANNER_SYSTEM=FILE ({max_steps} in it becomes the step limit)",
    )
    parser.add_argument(
        "--base-url",
        help="OpenAI-compatible server for openai: models (vLLM, llama-server, LM Studio, "
        "a LiteLLM proxy), e.g. http://127.0.0.1:8080/v1; no key needed on loopback",
    )


def _finish(outcome: RunOutcome, args: argparse.Namespace, console: Console) -> int:
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        _summary(outcome, console)
    return EXIT_CODES.get(outcome.status, 1)


def _summary(outcome: RunOutcome, console: Console) -> None:
    usage = outcome.usage
    console.print()
    console.print(
        f"[bold]Run {outcome.run_id}: {outcome.status}[/bold]  {escape(outcome.stop_reason)}"
    )
    for step_id, status in outcome.step_status.items():
        console.print(f"  {step_id}: {status}")
    tokens_in, tokens_out = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    console.print(
        f"  tokens: {tokens_in} in / {tokens_out} out, model calls: "
        f"{int(usage.get('model_calls', 0))}, cost ≈ ${usage.get('cost_usd', 0):.4f}"
    )
    if outcome.report:
        console.print(f"  report: {outcome.report}")
    if outcome.result:
        console.print(f"  result: {outcome.result}  (the package and its tests)")
    if outcome.question:
        q = outcome.question
        text = q.get("question") or "approve the plan? (approve / a note to replan)"
        if q.get("error"):
            console.print(f"[red]your last answer was not taken:[/red] {escape(str(q['error']))}")
        console.print(f"[yellow]waiting for you:[/yellow] {escape(str(text))}")
        console.print(f'  continue with: atom-agent resume {outcome.run_id} --answer "…"')


def _ask(outcome: RunOutcome, console: Console) -> str | None:
    """In a terminal, ask the pending question right away; elsewhere leave it for `resume`."""
    if not sys.stdin.isatty() or outcome.question is None:
        return None
    q = outcome.question
    prompt = q.get("question") or "Approve the plan? (approve, or a note to replan)"
    if q.get("error"):
        console.print(f"[red]that answer was not taken:[/red] {escape(str(q['error']))}")
    try:
        return console.input(f"[yellow]?[/yellow] {escape(str(prompt))} ").strip() or None
    except EOFError:
        return None


def _run(args: argparse.Namespace) -> int:
    from atom_agent.resources import Resources, models_from_factory
    from atom_agent.run import resume_run, run_task

    ctx = context_from_args(args)
    console = Console(stderr=args.json)
    progress = None if args.json else Progress(console, verbose=args.verbose > 0)
    # Built once here: the run and every answer given in this terminal share its models.
    with Resources(ctx, models=models_from_factory(args.models_factory)) as res:
        outcome = run_task(args.task, resources=res, run_id=args.run_id, on_event=progress)
        while outcome.status == "interrupted" and not args.json:
            answer = _ask(outcome, console)
            if answer is None:
                break
            outcome = resume_run(outcome.run_id, answer=answer, resources=res, on_event=progress)
    code = _finish(outcome, args, console)
    return _export(outcome, args, console) or code


def _export(outcome: RunOutcome, args: argparse.Namespace, console: Console) -> int:
    """``--out DIR``: copy the run's result there (never over existing files without --force)."""
    from atom_agent.workspace.deliverable import ExportError, export_result

    if not args.out or outcome.status == "interrupted":
        return 0
    if not outcome.result:
        console.print(f"[yellow]no result to write to {escape(args.out)}:[/yellow] no step "
                      "was committed")  # fmt: skip
        return 0
    try:
        written = export_result(Path(outcome.result), Path(args.out).expanduser(), force=args.force)
    except ExportError as exc:
        print(f"atom-agent: error: {exc}; the result stays in {outcome.result} "
              f"(atom-agent runs export {outcome.run_id} DIR)", file=sys.stderr)  # fmt: skip
        return 2
    console.print(f"  result written to: {escape(args.out)} ({len(written)} files)")
    return 0


def _resume(args: argparse.Namespace) -> int:
    from atom_agent.resources import Resources, models_from_factory
    from atom_agent.run import resume_run

    ctx = context_from_args(args)
    console = Console(stderr=args.json)
    progress = None if args.json else Progress(console, verbose=args.verbose > 0)
    with Resources(ctx, models=models_from_factory(args.models_factory)) as res:
        outcome = resume_run(args.run_id, answer=args.answer, resources=res, on_event=progress)
    return _finish(outcome, args, console)


def _common(parser: argparse.ArgumentParser) -> None:
    model_options(parser)
    parser.add_argument("--workspace", help="workspace directory (default: ATOM_WORKSPACE)")
    parser.add_argument("--project", help="memory project id")
    parser.add_argument("--max-attempts", type=int, help="attempts per step")
    parser.add_argument("--max-tool-calls", type=int, help="tool calls per attempt")
    parser.add_argument("--max-tokens", type=int, help="token budget of the run")
    parser.add_argument("--max-cost", type=float, help="cost budget of the run (USD)")
    parser.add_argument("--max-seconds", type=float, help="wall-clock budget of the run")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON only")
    parser.add_argument(
        "--models-factory", help="module:callable returning the chat model(s) to use"
    )


def register(subparsers: Any) -> None:
    """Add the `run` and `resume` subcommands."""
    run = subparsers.add_parser(
        "run",
        help="plan, execute and prove a task",
        description="Run a task to committed code. Exit codes: 0 every step committed, "
        "1 failed, 2 could not run (bad input or configuration), 3 waiting for an answer "
        "(see resume), 4 budget exhausted.",
    )
    run.add_argument("task", help="the software task, in plain words")
    run.add_argument("--run-id", help="run id (default: a new one)")
    run.add_argument(
        "--repo", help="work in this project: its changes come back as a branch atom/<run-id>"
    )
    run.add_argument("--test-command", help="the project's test command (default: detected)")
    run.add_argument("--approve-plan", action="store_true", help="pause to approve the plan")
    run.add_argument("--out", help="copy the result (package and tests) into this directory")
    run.add_argument("--force", action="store_true", help="let --out overwrite existing files")
    _common(run)
    run.set_defaults(func=_run)

    resume = subparsers.add_parser(
        "resume",
        help="continue an interrupted or killed run",
        description="Continue a run: answer its question, or pick up where a killed process "
        "stopped. Committed steps are not redone.",
    )
    resume.add_argument("run_id", help="the run to continue")
    resume.add_argument("--answer", help="the answer to the run's pending question")
    _common(resume)
    resume.set_defaults(func=_resume)
