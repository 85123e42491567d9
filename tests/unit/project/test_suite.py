"""A project's test suite: its command detected, run in the real sandbox, and the change gate."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from tests.unit.sandbox.conftest import make_runner

from atom_agent.errors import ConfigError
from atom_agent.project.suite import SuiteResult, gate, run_suite, suite_limits
from atom_agent.project.suite_command import TestCommand, detect
from atom_agent.sandbox import Limits, SandboxRunner

PY = sys.executable
NO_DEPRECATIONS = ["-W", "ignore::pytest.PytestDeprecationWarning"]
BASE = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NO_DEPRECATIONS]
LIMITS = Limits(timeout_s=120.0, cpu_s=120, memory_mb=1024)
TOOLZ = Path("/work/repotasks/toolz-update-in/repo")


def make(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# --- detection -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "source"),
    [
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\ntestpaths = ["checks"]\n',
            "pyproject.toml [tool.pytest.ini_options] testpaths",
        ),
        (
            "pyproject.toml",
            '[tool.pytest]\ntestpaths = ["checks"]\n',
            "pyproject.toml [tool.pytest]",
        ),
        ("pytest.ini", "[pytest]\ntestpaths = checks\n", "pytest.ini [pytest] testpaths"),
        ("setup.cfg", "[tool:pytest]\ntestpaths = checks\n", "setup.cfg [tool:pytest] testpaths"),
        ("tox.ini", "[tox]\n\n[pytest]\ntestpaths = checks\n", "tox.ini [pytest] testpaths"),
    ],
)
def test_detect_reads_each_config_kind(tmp_path: Path, name: str, text: str, source: str) -> None:
    # `checks` is no folder name detection would guess: only the config can name it.
    make(tmp_path, {name: text, "checks/test_a.py": "def test_a(): pass\n"})
    command = detect(tmp_path, python=PY)
    assert command.source.startswith(source)
    assert command.argv == [*BASE, "checks"]
    assert command.targets == ["checks"]
    assert command.python_path == ["."]


def test_detect_ignores_configs_without_a_pytest_section(tmp_path: Path) -> None:
    make(tmp_path, {"setup.cfg": "[metadata]\nname = x\n", "test/test_a.py": "", "README": ""})
    assert detect(tmp_path, python=PY) == TestCommand(
        [*BASE, "test"], ["."], "test/ folder", ["test"]
    )


def test_detect_folders_files_and_package_tests(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-ra'\n",  # no testpaths
            "tests/test_a.py": "",
            "test_top.py": "",
            "setup.py": "",
            "pkg/__init__.py": "",
            "pkg/tests/test_b.py": "",
            "other/__init__.py": "",
        },
    )
    command = detect(tmp_path, python=PY)
    assert command.targets == ["tests", "test_top.py", "pkg"]
    assert command.argv == [*BASE, "tests", "test_top.py", "pkg"]
    assert command.source == (
        "pyproject.toml [tool.pytest.ini_options]; "
        "tests/ folder, test_*.py at the top level, pkg/tests folder"
    )


def test_detect_src_layout_and_addopts_of_missing_plugins(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "pytest.ini": "[pytest]\naddopts = --cov=pkg --cov-report term -n 4 -ra -x\n",
            "src/pkg/__init__.py": "",
            "tests/test_a.py": "",
        },
    )
    command = detect(tmp_path, python=PY)
    assert command.python_path == ["src"]
    assert command.argv == [*BASE, "-o", "addopts=-ra -x", "tests"]
    assert command.source == "pytest.ini [pytest]; tests/ folder"


def test_detect_a_given_command(tmp_path: Path) -> None:
    make(tmp_path, {"tests/test_a.py": "", "src/pkg/__init__.py": ""})
    given = detect(tmp_path, python=PY, given="PYTHONPATH=lib:. pytest -x tests/test_a.py::test_a")
    assert given == TestCommand(
        [*BASE[:3], *NO_DEPRECATIONS, "-p", "no:cacheprovider", "-x", "tests/test_a.py::test_a"],
        ["lib", "."],
        "given",
        ["tests/test_a.py::test_a"],
    )
    plain = detect(tmp_path, python=PY, given="python3 -m pytest -p no:cacheprovider -k fast")
    assert plain.argv == [*BASE[:3], *NO_DEPRECATIONS, "-p", "no:cacheprovider", "-k", "fast"]
    assert plain.targets == [] and plain.python_path == ["src"]
    for bad in ("make test", "python -m unittest", "FOO=1 pytest"):
        with pytest.raises(ConfigError, match="--test-command"):
            detect(tmp_path, python=PY, given=bad)


def test_detect_nothing_like_tests(tmp_path: Path) -> None:
    make(tmp_path, {"pkg/__init__.py": "", "pkg/core.py": "", "pyproject.toml": "[project]\n"})
    with pytest.raises(ConfigError, match="--test-command"):
        detect(tmp_path, python=PY)
    make(tmp_path, {"pkg/deep/test_x.py": ""})
    assert detect(tmp_path, python=PY).targets == ["."]


def test_suite_limits_never_lower_limits() -> None:
    raised = suite_limits(Limits(timeout_s=10.0, cpu_s=10, memory_mb=512, output_bytes=99))
    assert (raised.timeout_s, raised.cpu_s, raised.memory_mb, raised.output_bytes) == (
        300.0,
        300,
        2048,
        99,
    )
    big = Limits(timeout_s=900.0, cpu_s=900, memory_mb=4096)
    assert suite_limits(big) == big


# --- running -------------------------------------------------------------------------------------

MIXED = """
    import pytest

    def test_pass():
        pass

    def test_fail():
        assert 1 == 2

    @pytest.mark.skip(reason="not today")
    def test_skip():
        pass

    @pytest.mark.xfail
    def test_expected():
        assert 0

    @pytest.mark.parametrize("n", [1, 2, "a.b"])
    def test_param(n):
        assert n != 2

    @pytest.fixture
    def broken():
        raise RuntimeError("fixture exploded")

    def test_setup_error(broken):
        pass

    class TestGroup:
        def test_in_class(self):
            pass

        class TestInner:
            def test_nested(self):
                pass
"""


@pytest.mark.parametrize("kind", ["bubblewrap", "namespaces"])
def test_node_ids_of_a_mixed_suite(tmp_path: Path, kind: str) -> None:
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/tests/__init__.py": ""})
    make(root, {"pkg/tests/test_mixed.py": MIXED})
    command = detect(root, python=PY)
    result = run_suite(root, command, runner=make_runner(kind), limits=LIMITS)
    f = "pkg/tests/test_mixed.py"
    assert result.passed == {
        f"{f}::test_pass",
        f"{f}::test_param[1]",
        f"{f}::test_param[a.b]",
        f"{f}::TestGroup::test_in_class",
        f"{f}::TestGroup::TestInner::test_nested",
    }
    assert result.failed == {f"{f}::test_fail", f"{f}::test_param[2]", f"{f}::test_setup_error"}
    assert result.skipped == {f"{f}::test_skip", f"{f}::test_expected"}
    assert result.collected_ok and result.exit_code == 1
    assert "assert 1 == 2" in result.output_tail
    # Nothing written into the project: no cache, no bytecode, no report.
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == [
        "__init__.py",
        "__init__.py",
        "test_mixed.py",
    ]


def test_src_layout_imports(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(
        tmp_path,
        {
            "src/calc/__init__.py": "def double(x):\n    return 2 * x\n",
            "tests/test_calc.py": "from calc import double\n\ndef test_double():\n"
            "    assert double(2) == 4\n",
        },
    )
    result = run_suite(root, detect(root, python=runner.python), runner=runner, limits=LIMITS)
    assert result.passed == {"tests/test_calc.py::test_double"}, result.output_tail
    assert result.collected_ok and not result.failed


PLUGINS_SEEN = """
    import sys

    from _pytest.assertion.rewrite import AssertionRewritingHook


    def test_the_sandbox_plugins_load_and_their_libraries_are_not_rewritten():
        import hypothesis

        assert "_hypothesis_pytestplugin" in sys.modules
        # Autoload would mark hypothesis for assert rewriting: seconds of every suite run.
        assert not isinstance(hypothesis.__loader__, AssertionRewritingHook)
        assert "langsmith" not in sys.modules
"""


def test_a_suite_loads_the_sandbox_s_plugins_by_name(tmp_path: Path) -> None:
    runner = make_runner("bubblewrap")
    assert runner.pytest_plugins() == ("_hypothesis_pytestplugin",)
    root = make(tmp_path, {"tests/test_plugins.py": PLUGINS_SEEN})
    result = run_suite(root, detect(root, python=runner.python), runner=runner, limits=LIMITS)
    assert result.passed == {
        "tests/test_plugins.py::test_the_sandbox_plugins_load_and_their_libraries_are_not_rewritten"
    }, result.output_tail


SET_PARAMETRIZED = """
    import pytest


    @pytest.mark.parametrize("pair", list({("a", 1), ("b", 2), ("c", 3), ("d", 4)}))
    def test_pair(pair):
        assert pair[0] == "a"
"""


def test_node_ids_are_the_same_run_after_run(tmp_path: Path) -> None:
    # Ids `pair0` … follow the set's iteration order, which the hash seed decides: the gate
    # would see a passing test vanish and another appear between the baseline and a change.
    runner = make_runner("bubblewrap")
    root = make(tmp_path, {"tests/test_set.py": SET_PARAMETRIZED})
    command = detect(root, python=runner.python)
    passed = [run_suite(root, command, runner=runner, limits=LIMITS).passed for _ in range(4)]
    assert len(passed[0]) == 1 and all(p == passed[0] for p in passed), passed


def test_node_ids_are_relative_to_the_project_root(tmp_path: Path, runner: SandboxRunner) -> None:
    # The config in a subfolder would make that folder pytest's rootdir (and its node ids
    # "tests/test_a.py::…"), which the gate's reruns could not find from the root.
    root = make(
        tmp_path, {"sub/pytest.ini": "[pytest]\n", "sub/tests/test_a.py": "def test_a(): pass\n"}
    )
    command = detect(root, python=runner.python, given="pytest sub/tests")
    result = run_suite(root, command, runner=runner, limits=LIMITS)
    assert result.passed == {"sub/tests/test_a.py::test_a"}, result.output_tail


def test_syntax_error_is_not_a_collected_suite(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(
        tmp_path,
        {
            "app.py": "def broken(:\n    pass\n",
            "tests/test_app.py": "import app\n\ndef test_app():\n    pass\n",
            "tests/test_ok.py": "def test_ok():\n    pass\n",
        },
    )
    result = run_suite(root, detect(root, python=runner.python), runner=runner, limits=LIMITS)
    assert not result.collected_ok
    assert "SyntaxError" in result.output_tail
    assert result.failed == {"tests/test_app.py"}
    assert result.exit_code == 2


def test_pytest_deprecations_are_no_errors(tmp_path: Path, runner: SandboxRunner) -> None:
    # The project's `filterwarnings = error` is about its code, not about the sandbox's pytest
    # deprecating what the project's pinned pytest allowed.
    root = make(
        tmp_path,
        {
            "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
            "tests/test_old.py": """
                import warnings

                import pytest

                warnings.warn(pytest.PytestDeprecationWarning("old pytest usage"))

                def test_old():
                    warnings.warn(DeprecationWarning("the project's own: still an error"))
            """,
        },
    )
    result = run_suite(root, detect(root, python=runner.python), runner=runner, limits=LIMITS)
    assert result.collected_ok, result.output_tail
    assert result.failed == {"tests/test_old.py::test_old"}


def test_a_run_without_report_keeps_its_output(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(tmp_path, {"tests/test_a.py": "def test_a():\n    pass\n"})
    command = detect(root, python=runner.python, given="pytest --no-such-option tests")
    result = run_suite(root, command, runner=runner, limits=LIMITS)
    assert not result.collected_ok
    assert result.passed == result.failed == result.skipped == frozenset()
    assert "--no-such-option" in result.output_tail
    assert "pytest left no report" in result.output_tail


def test_only(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            "tests/test_a.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n",
        },
    )
    command = detect(root, python=runner.python)
    one = run_suite(root, command, runner=runner, limits=LIMITS, only=["tests/test_a.py::test_b"])
    assert one.passed == {"tests/test_a.py::test_b"} and not one.failed


# --- the gate ------------------------------------------------------------------------------------

FLAKY = """
    from pathlib import Path

    def test_flaky():
        # Passes on the 1st and 3rd run, fails on the 2nd: the counter lives beside the test.
        counter = Path(__file__).with_name("runs.txt")
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        assert runs != 2
"""


def test_gate_on_real_runs(tmp_path: Path, runner: SandboxRunner) -> None:
    root = make(
        tmp_path,
        {
            "calc.py": "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a + b\n",
            "tests/test_calc.py": """
                from calc import add, sub

                def test_add():
                    assert add(2, 3) == 5

                def test_sub():
                    assert sub(5, 3) == 2

                def test_stable():
                    pass
            """,
            "tests/test_flaky.py": FLAKY,
        },
    )
    command = detect(root, python=runner.python)
    baseline = run_suite(root, command, runner=runner, limits=LIMITS)
    assert baseline.failed == {"tests/test_calc.py::test_sub"}, baseline.output_tail
    # The change fixes sub, breaks add, and adds a failing test.
    make(
        root, {"calc.py": "def add(a, b):\n    return a * b\n\ndef sub(a, b):\n    return a - b\n"}
    )
    make(root, {"tests/test_more.py": "def test_more():\n    assert False\n"})
    after = run_suite(root, command, runner=runner, limits=LIMITS)
    calls: list[list[str]] = []

    def rerun(ids: list[str]) -> SuiteResult:
        calls.append(ids)
        return run_suite(root, command, runner=runner, limits=LIMITS, only=ids)

    verdict = gate(baseline, after, rerun)
    assert calls == [["tests/test_calc.py::test_add", "tests/test_flaky.py::test_flaky"]]
    assert verdict.regressions == ["tests/test_calc.py::test_add"]
    assert verdict.flaky == ["tests/test_flaky.py::test_flaky"]
    assert verdict.fixed == ["tests/test_calc.py::test_sub"]
    assert verdict.new_failures == ["tests/test_more.py::test_more"]


def result(passed: set[str], failed: set[str] = set(), skipped: set[str] = set()) -> SuiteResult:  # noqa: B006
    return SuiteResult(frozenset(passed), frozenset(failed), frozenset(skipped), 1.0, 0, "", True)


def never(ids: list[str]) -> SuiteResult:
    raise AssertionError(f"rerun called with {ids}")


def test_gate_without_suspects_does_not_rerun() -> None:
    verdict = gate(result({"a", "b"}, {"c"}), result({"a", "b", "c", "n"}), never)
    assert verdict.fixed == ["c"] and verdict.regressions == verdict.flaky == []
    # Skipped after the change is not a failure; a test that vanished is suspect.
    assert not gate(result({"a"}), result(set(), skipped={"a"}), never).regressions
    gone = gate(result({"a", "b"}), result({"a"}), lambda ids: result(set(), {"x"}))
    assert gone.regressions == ["b"]
    # A test skipped in the baseline that fails now is a new failure (it never passed here).
    assert gate(result(set(), skipped={"s"}), result(set(), {"s"}), never).new_failures == ["s"]


def test_suite_result_dicts() -> None:
    failed = {f"t.py::test_{i:03d}" for i in range(57)}
    full = SuiteResult(
        frozenset({"t.py::ok"}), frozenset(failed), frozenset(), 2.5, 1, "tail", True
    )
    data = full.to_dict()
    assert (data["passed"], data["failed"], data["skipped"]) == (1, 57, 0)
    assert data["ids"]["failed"] == sorted(failed)
    assert SuiteResult.from_dict(data) == full


@pytest.mark.skipif(not TOOLZ.is_dir(), reason="the prepared toolz checkout is not here")
def test_toolz_baseline(runner: SandboxRunner) -> None:
    command = detect(TOOLZ, python=runner.python)
    assert command.targets == ["toolz"]
    baseline = run_suite(TOOLZ, command, runner=runner, limits=suite_limits(LIMITS))
    assert baseline.collected_ok, baseline.output_tail
    assert len(baseline.passed) > 150
    assert not baseline.failed, sorted(baseline.failed)[:5]
