"""Pytest counts parsed from real pytest runs in the sandbox."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from atom_agent.sandbox import Limits, SubprocessRunner, TestCounts

Short = Callable[..., Limits]

MIXED = """
    import pytest

    def test_one():
        assert 1 + 1 == 2

    def test_two():
        assert "a".upper() == "A"

    def test_wrong():
        assert sum([1, 2]) == 4

    @pytest.mark.skip(reason="not today")
    def test_skipped():
        pass

    @pytest.fixture
    def broken():
        raise RuntimeError("fixture exploded")

    def test_uses_broken(broken):
        pass
"""


def write(path: Path, source: str) -> None:
    path.write_text(textwrap.dedent(source), encoding="utf-8")


def test_counts_from_a_real_mixed_run(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    write(staging / "test_mixed.py", MIXED)
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.exit_code == 1
    assert result.tests == TestCounts(passed=2, failed=1, errors=1, skipped=1)
    assert result.tests.total == 5
    assert "test_wrong" in result.output
    assert not (staging / ".pytest_cache").exists() and not (staging / "__pycache__").exists()


def test_all_passing_and_targets(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    write(staging / "impl.py", "def double(x):\n    return 2 * x\n")
    write(
        staging / "test_impl.py",
        """
        from impl import double

        def test_double():
            assert double(4) == 8
    """,
    )
    write(staging / "test_other.py", "def test_fails():\n    assert False\n")
    result = runner.run_pytest(
        cwd=staging, limits=short(timeout_s=30.0), targets=["test_impl.py"], python_path=[staging]
    )
    assert result.ok and result.tests == TestCounts(passed=1)


def test_the_executors_test_py_is_collected(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    # The executor writes impl.py and test.py; pytest's defaults would skip test.py.
    write(staging / "impl.py", "def square(x):\n    return x * x\n")
    write(
        staging / "test.py",
        """
        from impl import square

        def test_square():
            assert square(3) == 9

        def test_negative():
            assert square(-2) == 4
    """,
    )
    write(staging / "helper.py", "def test_not_collected():\n    assert False\n")
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0), python_path=[staging])
    assert result.ok and result.tests == TestCounts(passed=2)


def test_collection_error_counts_as_error(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    write(staging / "test_broken.py", "import module_that_does_not_exist\n")
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.exit_code == 2
    assert result.tests is not None and result.tests.errors == 1 and result.tests.passed == 0
    assert "module_that_does_not_exist" in result.output


def test_no_tests_collected(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    write(staging / "impl.py", "X = 1\n")
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.exit_code == 5
    assert result.tests is not None and result.tests.total == 0


def test_enclosing_project_config_does_not_leak_in(
    runner: SubprocessRunner, staging: Path, tmp_path: Path, short: Short
) -> None:
    # A conftest or ini above the staging area (e.g. the developer's repo) must not apply.
    write(tmp_path / "conftest.py", "raise RuntimeError('parent conftest was loaded')\n")
    write(tmp_path / "pytest.ini", "[pytest]\naddopts = --this-flag-does-not-exist\n")
    write(staging / "test_fine.py", "def test_fine():\n    pass\n")
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.ok, result.output
    assert result.tests == TestCounts(passed=1)


def test_hanging_test_times_out(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    write(staging / "test_hang.py", "import time\n\ndef test_hang():\n    time.sleep(1000)\n")
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=3.0))
    assert result.timed_out and not result.ok
    assert result.tests is None  # killed before pytest could report anything


DIES = """
    import os

    def test_fine():
        pass

    def test_exits():
        print("\\n=== 7 passed in 0.01s ===")   # a forged summary line: must not count
        os._exit(0)
"""


def test_a_test_calling_os_exit_is_a_failure_not_exit_code_0(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    write(staging / "test_dies.py", DIES)
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.exit_code == 0  # what the process said …
    assert not result.ok and result.tests is None  # … is not what pytest reported
    assert result.report_error.startswith("pytest died before reporting: exit code 0")


def test_pytest_killed_by_a_signal_has_no_counts(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    write(
        staging / "test_kill.py",
        "import os, signal\n\ndef test_kill():\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.tests is None and not result.ok
    assert "pytest died before reporting: killed by SIGKILL" in result.report_error


def test_a_runs_scratch_directory_is_removed_after_it(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    # The test leaves a file in its TMPDIR (inside the run's scratch) and says where that is.
    write(
        staging / "test_where.py",
        """
        import os
        from pathlib import Path

        def test_leaves_a_file():
            Path(os.environ["TMPDIR"], "left.txt").write_text("x")
            Path("where.txt").write_text(os.environ["TMPDIR"])
        """,
    )
    result = runner.run_pytest(cwd=staging, limits=short(timeout_s=30.0))
    assert result.tests == TestCounts(passed=1, failed=0, errors=0, skipped=0)
    scratch = Path((staging / "where.txt").read_text()).parent
    assert scratch.name.startswith("atom-pytest-")
    # Removed off the caller's path, on the runner's cleaning thread: soon, not at once.
    deadline = time.monotonic() + 10
    while scratch.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not scratch.exists()
