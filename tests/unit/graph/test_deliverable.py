"""A run ends in result/: one package with its tests, usable outside the workspace."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from atom_agent import Context, run_task
from atom_agent.checkpoints import sqlite_checkpointer
from atom_agent.cli import main
from atom_agent.graph import build_graph
from atom_agent.resources import Resources
from atom_agent.state import Plan
from atom_agent.workspace import Workspace
from atom_agent.workspace.deliverable import ExportError, export_result

from .scripts import ADD_IMPL, ADD_TEST, ExecutorScript, models, passing_attempt, step

DOUBLE_IMPL = "from deps.adder.impl import add\n\n\ndef double(x):\n    return add(x, x)\n"
DOUBLE_TEST = "from impl import double\n\n\ndef test_double():\n    assert double(4) == 8\n"
CALC_IMPL = '''\
"""Arithmetic on top of the earlier steps."""

import deps.adder.impl
import deps.doubler.impl as dbl  # the doubling step
from deps.adder import impl as base


def add(a, b):
    """Adds, and accepts strings of digits."""
    return deps.adder.impl.add(int(a), int(b))


class Calculator:
    def quadruple(self, x):
        return dbl.double(dbl.double(x))

    def plus(self, a, b):
        return base.add(a, b)
'''
CALC_TEST = """\
import impl
from impl import Calculator


def test_calculator():
    assert impl.add("2", 3) == 5
    assert Calculator().quadruple(2) == 8
    assert Calculator().plus(1, 1) == 2
"""
TASK = "Write the functions add(a, b) and double(x), and a Calculator class using them"


def _three_step_run(ctx: Context, run_id: str = "calc") -> Path:
    plan = Plan(
        steps=[
            step("adder", defines=["add"]),
            step("doubler", depends_on=["adder"], defines=["double"]),
            step("calc", depends_on=["adder", "doubler"], defines=["add", "Calculator"]),
        ]
    )
    executor = ExecutorScript(
        {
            ("adder", 1): passing_attempt(ADD_IMPL, ADD_TEST),
            ("doubler", 1): passing_attempt(DOUBLE_IMPL, DOUBLE_TEST),
            ("calc", 1): passing_attempt(CALC_IMPL, CALC_TEST),
        }
    )
    roles = models([plan], executor)
    outcome = run_task(TASK, ctx, models=roles, run_id=run_id)
    assert outcome.status == "done", outcome
    run = Workspace(ctx.workspace).run(run_id)
    assert outcome.result == str(run.path / "result")
    # The final graph state carries both paths.
    with sqlite_checkpointer(Workspace(ctx.workspace)) as saver:
        graph = build_graph(Resources(ctx, models=roles), checkpointer=saver)
        values = graph.get_state({"configurable": {"thread_id": run_id}}).values
    assert values["result_dir"] == outcome.result
    assert values["report_path"] == str(run.report_md)
    return Path(outcome.result)


def _imported_modules(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_a_run_ends_in_one_package_whose_tests_pass_in_a_fresh_pytest(
    ctx: Context, tmp_path: Path
) -> None:
    result = _three_step_run(ctx)
    package = result / "calculator"
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py", "adder.py", "calc.py", "doubler.py",
    ]  # fmt: skip
    assert sorted(p.name for p in (result / "tests").iterdir()) == [
        "test_adder.py", "test_calc.py", "test_doubler.py",
    ]  # fmt: skip
    sources = {p: p.read_text() for p in result.rglob("*.py")}
    for path, source in sources.items():
        imported = _imported_modules(source)
        assert not {m for m in imported if m == "impl" or m.startswith("deps")}, (path, imported)
    calc = (package / "calc.py").read_text()
    assert "import calculator.doubler as dbl  # the doubling step" in calc  # comment kept
    assert "return calculator.adder.add(int(a), int(b))" in calc
    assert "from calculator import adder as base" in calc
    assert "import calculator.calc as impl" in (result / "tests" / "test_calc.py").read_text()

    run_dir = result.parent
    info = json.loads((run_dir / "run.json").read_text())["deliverable"]
    assert info["package"] == "calculator"
    assert info["modules"] == {
        "adder": "calculator.adder", "doubler": "calculator.doubler", "calc": "calculator.calc",
    }  # fmt: skip
    assert info["exports"] == {"add": "calc", "double": "doubler", "Calculator": "calc"}
    assert info["tests"]["ok"] is True and info["tests"]["passed"] == 3
    assert [c["name"] for c in info["conflicts"]] == ["add"]  # defined twice, differently
    assert info["conflicts"][0]["exported_from"] == "calc"  # the later step wins
    report = (run_dir / "report.md").read_text()
    assert "## Result" in report and "3 passed, 0 failed" in report
    assert "Defined twice, differently: `add`" in report

    # Copied out of the workspace, with no install: it imports and its tests pass.
    out = tmp_path / "elsewhere"
    export_result(result, out)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=out, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    used = subprocess.run(
        [sys.executable, "-c", "import calculator as c; print(c.add('2', 3), c.double(4))"],
        cwd=out, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert used.stdout.strip() == "5 8", used.stderr


def test_a_later_steps_copy_of_a_name_it_was_not_given_does_not_replace_the_owners(
    ctx: Context,
) -> None:
    # The doubling step writes `add` again, wrongly, beside the `double` it was asked for
    # (a small model rewrites the whole file): the package keeps the adder step's `add`.
    copy = DOUBLE_IMPL.replace(
        "from deps.adder.impl import add\n", "def add(a, b):\n    return a + b if a != 2 else -1\n"
    )
    plan = Plan(
        steps=[
            step("adder", defines=["add"]),
            step("doubler", depends_on=["adder"], defines=["double"]),
        ]
    )
    executor = ExecutorScript(
        {
            ("adder", 1): passing_attempt(ADD_IMPL, ADD_TEST),
            ("doubler", 1): passing_attempt(copy, DOUBLE_TEST),
        }
    )
    outcome = run_task(TASK, ctx, models=models([plan], executor), run_id="copy")
    assert outcome.status == "done", outcome
    result = Path(outcome.result)
    info = json.loads((result.parent / "run.json").read_text())["deliverable"]
    assert info["exports"]["add"] == "adder" and info["exports"]["double"] == "doubler"
    assert [(c["name"], c["exported_from"]) for c in info["conflicts"]] == [("add", "adder")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    package = info["package"]
    done = subprocess.run(
        [sys.executable, "-c", f"from {package} import add, double; print(add(2, 3), double(4))"],
        cwd=result, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.split() == ["5", "8"], done.stderr


def test_export_refuses_to_overwrite_unless_forced(
    ctx: Context, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    executor = ExecutorScript({("adder", 1): passing_attempt()})
    roles = models([Plan(steps=[step("adder", defines=["add"])])], executor)
    outcome = run_task("Write add(a, b)", ctx, models=roles, run_id="exp")
    assert outcome.result is not None
    result = Path(outcome.result)
    out = tmp_path / "out"
    args = ["runs", "export", "exp", str(out), "--workspace", ctx.workspace]
    assert main(args) == 0
    mine = out / "add" / "adder.py"
    mine.write_text("# my edits\n")
    assert main(args) == 2
    assert "exist already" in capsys.readouterr().err
    assert mine.read_text() == "# my edits\n"  # nothing was written
    assert main([*args, "--force"]) == 0
    assert mine.read_text() == (result / "add" / "adder.py").read_text()
    with pytest.raises(ExportError, match="is not a directory"):
        export_result(result, mine)


def test_run_out_writes_the_result_and_refuses_existing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    common = ["--workspace", str(tmp_path / "ws"), "--models-factory",
              "tests.unit.graph.factory:two_slow_steps", "--out", str(out), "--json"]  # fmt: skip
    assert main(["run", "two things", *common]) == 0
    assert (out / "pyproject.toml").is_file() and list(out.glob("*/__init__.py"))
    capsys.readouterr()
    assert main(["run", "two things", *common]) == 2
    assert "exist already" in capsys.readouterr().err
    assert main(["run", "two things", *common, "--force"]) == 0
