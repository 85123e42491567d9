"""The project's declared dependencies: read from its files, importable in the sandbox."""

from __future__ import annotations

from pathlib import Path

from atom_agent.project.environment import declared, dependencies
from atom_agent.project.suite import run_suite, suite_limits
from atom_agent.project.suite_command import detect
from atom_agent.sandbox import Limits, default_runner

PYPROJECT = """\
[project]
name = "demo"
dependencies = ["rich>=10", "not-a-real-dist-xyz ; python_version > '3'"]
[project.optional-dependencies]
test = ["pytest"]
docs = ["sphinx"]
"""


def test_declared_names_come_from_pyproject_setup_cfg_and_requirements(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "setup.cfg").write_text("[options]\ninstall_requires =\n    click\n")
    (tmp_path / "requirements-dev.txt").write_text("-r base.txt\n# comment\nhypothesis==6.0\n")
    assert declared(tmp_path) == ["rich", "not-a-real-dist-xyz", "pytest", "click", "hypothesis"]
    deps = dependencies(tmp_path)
    assert "rich" in deps.installed and deps.missing == ("not-a-real-dist-xyz",)


def test_an_installed_dependency_is_importable_by_the_projects_tests(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text(
        "import rich\n\ndef test_rich():\n    assert rich\n"
    )
    runner = default_runner()
    command = detect(tmp_path, python=runner.python)
    limits = suite_limits(Limits(timeout_s=120))
    with_deps = runner.with_packages(dependencies(tmp_path).installed)
    result = run_suite(tmp_path, command, runner=with_deps, limits=limits)
    assert result.passed == {"tests/test_it.py::test_rich"}, result.output_tail
    if runner.kind == "bubblewrap":  # the cut-down site-packages hides what is not asked for
        bare = run_suite(tmp_path, command, runner=runner, limits=limits)
        assert "tests/test_it.py::test_rich" not in bare.passed
