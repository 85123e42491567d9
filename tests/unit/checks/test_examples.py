"""The task's own examples, run against impl.py in the sandbox, tell code bugs from test bugs."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.examples import examples_feedback, run_examples, task_examples
from atom_agent.sandbox import Limits, default_runner

TASK = """Write mean(xs) in impl.py.

    >>> mean([1.0, 2.0, 3.0])
    2.0
    >>> mean([4])
    4.0
    >>> helper_of_another_step(1)
    1
    >>> print("no expected output is still an example")
    no expected output is still an example
"""
RUNNER = default_runner()
LIMITS = Limits(timeout_s=10.0, cpu_s=10)


def _run(tmp_path: Path, impl: str) -> object:
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "impl.py").write_text(impl)
    return run_examples(task_examples(TASK), staging=staging, runner=RUNNER, limits=LIMITS)


def test_examples_are_parsed_from_the_task_and_deduplicated() -> None:
    found = task_examples(TASK, TASK, "prose without examples", ">>> x = 1\n")
    assert [source for source, _ in found] == [
        "mean([1.0, 2.0, 3.0])\n",
        "mean([4])\n",
        "helper_of_another_step(1)\n",
        'print("no expected output is still an example")\n',
    ]  # `x = 1` has no expected output: it checks nothing


def test_a_correct_implementation_passes_and_other_steps_names_do_not_apply(
    tmp_path: Path,
) -> None:
    report = _run(tmp_path, "def mean(xs):\n    return sum(xs) / len(xs)\n")
    assert report.passed == 3 and report.failed == [] and report.not_applicable == 1  # type: ignore[attr-defined]
    (line,) = examples_feedback(report, tests_failed=True)  # type: ignore[arg-type]
    assert "all 3 of the task's examples" in line and "fix the test, not the code" in line
    assert examples_feedback(report, tests_failed=False) == []  # type: ignore[arg-type]


def test_a_wrong_implementation_is_shown_what_it_got(tmp_path: Path) -> None:
    report = _run(tmp_path, "def mean(xs):\n    return float(max(xs))\n")
    assert report.passed == 2  # type: ignore[attr-defined]  # mean([4]) and the print
    assert report.failed == [  # type: ignore[attr-defined]
        {"source": "mean([1.0, 2.0, 3.0])", "want": "2.0", "got": "3.0"}
    ]
    (line,) = examples_feedback(report, tests_failed=True)  # type: ignore[arg-type]
    assert "fails 1 of the task's 3 examples" in line and "got `3.0`" in line
    assert "fix the code" in line


def test_an_exception_is_a_failure_with_its_message(tmp_path: Path) -> None:
    report = _run(tmp_path, "def mean(xs):\n    return sum(xs) / 0\n")
    assert len(report.failed) == 2  # type: ignore[attr-defined]
    assert report.failed[0]["got"].startswith("ZeroDivisionError")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("impl", "error"),
    [
        ("def mean(xs) return 0\n", "impl.py did not import: SyntaxError"),
        ("import time\ntime.sleep(60)\n", "the examples did not run: killed at the timeout"),
    ],
)
def test_an_implementation_that_cannot_run_is_an_error_not_a_verdict(
    tmp_path: Path, impl: str, error: str
) -> None:
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "impl.py").write_text(impl)
    report = run_examples(
        task_examples(TASK), staging=staging, runner=RUNNER, limits=Limits(timeout_s=2.0)
    )
    assert report.error.startswith(error)
    assert report.ran == 0 and examples_feedback(report, tests_failed=True) == []


def test_no_examples_runs_nothing(tmp_path: Path) -> None:
    report = run_examples([], staging=tmp_path, runner=RUNNER, limits=LIMITS)
    assert report.ran == 0 and report.error == ""
