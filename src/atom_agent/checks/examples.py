"""The task's own examples (``>>> call`` / expected output) run against impl.py, as evidence.

A small model's tests are an unreliable oracle: it often writes a wrong expected value, so a
correct implementation fails its own tests and is never committed. Examples written in the task
(a docstring's doctests, usually) are the user's specification. The reflector runs them in the
sandbox against the attempt's impl.py; they never pass a step on their own (failing tests still
fail it), but they tell the next attempt which side to fix: the code, or the test.
"""

from __future__ import annotations

import doctest
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atom_agent.sandbox import Limits, SandboxRunner

MAX_EXAMPLES = 40
"""Examples run per check (the first ones of the task)."""

# Runs in the sandbox: argv[1] is a JSON list of [source, want]; prints one JSON line.
_CHILD = r"""
import doctest, io, json, sys
examples = [doctest.Example(s, w) for s, w in json.loads(sys.argv[1])]
results = []
try:
    import impl
except BaseException as exc:
    print(json.dumps({"import_error": f"{type(exc).__name__}: {exc}"[:300]}))
    raise SystemExit(0)
class Recorder(doctest.DocTestRunner):
    def _add(self, example, status, got):
        results.append({"source": example.source.strip(), "want": example.want.strip(),
                        "status": status, "got": got.strip()[:300]})
    def report_start(self, out, test, example):
        return None  # no per-example chatter
    def report_success(self, out, test, example, got):
        self._add(example, "passed", got)
    def report_failure(self, out, test, example, got):
        self._add(example, "failed", got)
    def report_unexpected_exception(self, out, test, example, exc_info):
        kind = "not_applicable" if issubclass(exc_info[0], NameError) else "error"
        self._add(example, kind, f"{exc_info[0].__name__}: {exc_info[1]}")
runner = Recorder(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
test = doctest.DocTest(examples, dict(vars(impl)), "task", None, 0, None)
runner.run(test, out=io.StringIO().write, clear_globs=False)
print(json.dumps({"examples": results}))
"""


@dataclass
class ExamplesReport:
    """What the task's examples said about an implementation.

    Attributes:
        passed: examples whose output matched.
        failed: examples that ran with another output or raised (source, want, got).
        not_applicable: examples naming something impl.py does not define (another step's).
        error: why the check could not run at all ('' when it ran).
    """

    passed: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    not_applicable: int = 0
    error: str = ""

    @property
    def ran(self) -> int:
        """Examples that applied to this implementation."""
        return self.passed + len(self.failed)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (for verdict.json)."""
        return {
            "passed": self.passed,
            "failed": self.failed,
            "not_applicable": self.not_applicable,
            "error": self.error,
        }


def task_examples(*texts: str) -> list[tuple[str, str]]:
    """The ``>>>`` examples (source, expected output) written in `texts`, deduplicated."""
    parser = doctest.DocTestParser()
    found: dict[tuple[str, str], None] = {}
    for text in texts:
        try:
            examples = parser.get_examples(text or "")
        except ValueError:  # inconsistent indentation in prose: no usable examples
            continue
        for example in examples:
            if example.want.strip():  # an example without an expected output checks nothing
                found.setdefault((example.source, example.want), None)
    return list(found)[:MAX_EXAMPLES]


def run_examples(
    examples: list[tuple[str, str]],
    *,
    staging: Path,
    runner: SandboxRunner,
    limits: Limits,
    python_path: list[Path] | None = None,
) -> ExamplesReport:
    """Run `examples` against ``staging/impl.py`` in the sandbox."""
    if not examples:
        return ExamplesReport()
    result = runner.run(
        [runner.python, "-c", _CHILD, json.dumps(examples)],
        cwd=staging,
        limits=limits,
        python_path=python_path or [staging],
    )
    line = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    try:
        data = json.loads(line)
    except ValueError:
        reason = f"killed at the {result.limit_hit} limit" if result.timed_out else line[:300]
        return ExamplesReport(error=f"the examples did not run: {reason or 'no output'}")
    if "import_error" in data:
        return ExamplesReport(error=f"impl.py did not import: {data['import_error']}")
    report = ExamplesReport()
    for item in data.get("examples", []):
        status = item.get("status")
        if status == "passed":
            report.passed += 1
        elif status == "not_applicable":
            report.not_applicable += 1
        else:
            report.failed.append(
                {"source": item["source"], "want": item["want"], "got": item["got"]}
            )
    return report


def examples_feedback(report: ExamplesReport, tests_failed: bool) -> list[str]:
    """What the next attempt should learn from the examples (nothing if none applied)."""
    if report.error or not report.ran:
        return []
    if report.failed:
        shown = "; ".join(
            f"`{f['source']}` should give `{f['want']}`, got `{f['got']}`"
            for f in report.failed[:3]
        )
        return [
            f"impl.py fails {len(report.failed)} of the task's {report.ran} examples: {shown} "
            "(fix the code)"
        ]
    if tests_failed:
        which = (
            "the task's example"
            if report.passed == 1
            else (f"all {report.passed} of the task's examples")
        )
        return [
            f"impl.py gives the expected output for {which}, but test.py does not pass: the "
            "test is probably wrong (a wrong expected value, or it does not run). Check "
            "test.py against the task's examples and fix the test, not the code."
        ]
    return []
