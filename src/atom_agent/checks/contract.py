"""A step's contract: its executable checks, validated by code and run in the sandbox.

A check is a call and the result (or exception) it must give, written before any code. Code
validates it (it parses, it calls what the step defines), runs it against a staged
``impl.py`` (one child process, a time limit per check, results streamed so a crash keeps
what ran) and turns it into plain pytest tests for the deliverable. A check that cannot run
is reported with its reason and never counts as passed.
"""

from __future__ import annotations

import ast
import builtins
import json
import sys
import textwrap
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from atom_agent.names import free_names
from atom_agent.sandbox import Limits, RunResult, SandboxRunner
from atom_agent.state import IMPL_FILE, Check

CheckStatus = Literal["passed", "failed", "error", "timeout", "invalid", "not_run"]
SIGNATURE_CRITERION = "the signatures the task states (names, parameters, defaults)"
"""The criterion of the checks that compare a stated signature (they show no behaviour)."""
SHAPE_CRITERIA = frozenset({SIGNATURE_CRITERION})
"""Checks of a callable's shape (parameters), not of what it computes."""
PER_CHECK_SECONDS = 5.0
"""Time one check may take before it counts as a loop (``timeout``)."""
AFTER_LOOP_SECONDS = 1.0
"""Time each later check of the same code may take once one of its checks looped: code that
looped on one input is not given the full time again on every other."""
_MARK = "@@ATOM-CHECK@@"
_STDLIB = frozenset(sys.stdlib_module_names)


def check_problems(
    check: Check, *, defines: Collection[str] = (), available: Collection[str] = ()
) -> list[str]:
    """Why `check` cannot run as written (empty when it can).

    Args:
        check: the check.
        defines: what its step defines; when given, the check must use one of these names.
        available: other names it may use (what dependencies define).
    """
    problems: list[str] = []
    try:
        tree = ast.parse(check.call, mode="exec")
    except (SyntaxError, ValueError) as exc:
        return [f"the call is not Python: {getattr(exc, 'msg', exc)}"]
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        problems.append("the call's last line must be an expression (the value to compare)")
    if bool(check.expect.strip()) == bool(check.raises.strip()):
        problems.append("give exactly one of `expect` (a value) and `raises` (an exception)")
    if check.expect.strip():
        try:
            ast.parse(check.expect, mode="eval")
        except (SyntaxError, ValueError) as exc:
            problems.append(f"the expected value is not Python: {getattr(exc, 'msg', exc)}")
    if check.raises.strip() and not check.raises.strip().replace(".", "_").isidentifier():
        problems.append(f"`raises` must name an exception class, not {check.raises!r}")
    if problems:
        return problems
    known = set(defines) | set(available) | _STDLIB
    used = free_names(check.call + "\n" + (check.expect or "None"))
    unknown = [n for n in used if n not in known]
    if defines and unknown:
        problems.append(
            f"it uses {', '.join(unknown)}, which the step does not define "
            f"(the step defines {', '.join(sorted(defines))})"
        )
    elif defines and not set(used) & set(defines) and not check.raises:
        problems.append(f"it calls nothing the step defines ({', '.join(sorted(defines))})")
    return problems


@dataclass
class CheckResult:
    """What running one check gave."""

    check: Check
    status: CheckStatus
    got: str = ""
    reason: str = ""
    function: str = ""
    """Where the code under test raised or was stopped: its function (qualified name) …"""
    line: str = ""
    """… and its line (``"line 31: decoded += count * s[i]"``); empty when it returned …"""
    arguments: str = ""
    """… and the arguments that function had then (``"align='decimal', colwidth=9"``)."""

    @property
    def executed(self) -> bool:
        """Whether the code ran the check to a result (passed, failed, raised, looped)."""
        return self.status in ("passed", "failed", "error", "timeout")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (verdict.json)."""
        return {
            "check": self.check.describe(),
            "origin": self.check.origin,
            "criterion": self.check.criterion,
            "clause": self.check.clause,
            "status": self.status,
            "got": self.got,
            "reason": self.reason,
            **({"function": self.function, "line": self.line} if self.function else {}),
            **({"arguments": self.arguments} if self.arguments else {}),
        }


@dataclass
class ContractReport:
    """The results of a contract run against one implementation."""

    results: list[CheckResult] = field(default_factory=list)
    error: str = ""

    @property
    def passed(self) -> list[CheckResult]:
        """Checks that held."""
        return [r for r in self.results if r.status == "passed"]

    @property
    def failed(self) -> list[CheckResult]:
        """Checks the code ran and did not meet (wrong value, an exception, a loop)."""
        return [r for r in self.results if r.status in ("failed", "error", "timeout")]

    @property
    def invalid(self) -> list[CheckResult]:
        """Checks that could not run, with why."""
        return [r for r in self.results if r.status in ("invalid", "not_run")]

    def all_passed(self, ignore: Collection[int] = ()) -> bool:
        """Every runnable check held (checks at indexes in `ignore` excepted), at least one ran."""
        runnable = [
            r for i, r in enumerate(self.results) if i not in ignore and r.status != "invalid"
        ]
        return bool(runnable) and all(r.status == "passed" for r in runnable)

    def holds(self, ignore: Collection[int] = ()) -> bool:
        """No runnable check (checks at indexes in `ignore` excepted) failed or was left unrun.

        True when nothing could run: checks that cannot run never decide anything.
        """
        return all(
            r.status in ("passed", "invalid") for i, r in enumerate(self.results) if i not in ignore
        )

    def task_checks_hold(self, ignore: Collection[int] = ()) -> bool:
        """Every check the task states that could run passed, and one of them checks a value.

        A signature check compares names and defaults, not what the code computes: it does
        not count as that value check.
        """
        mine = [
            r
            for i, r in enumerate(self.results)
            if i not in ignore and r.check.origin == "task" and r.status != "invalid"
        ]
        return (
            bool(mine)
            and all(r.status == "passed" for r in mine)
            and any(not r.check.raises and r.check.criterion not in SHAPE_CRITERIA for r in mine)
        )

    def summary(self) -> str:
        """``3 passed, 1 failed, 1 cannot run``."""
        parts = [f"{len(self.passed)} passed", f"{len(self.failed)} failed"]
        if self.invalid:
            parts.append(f"{len(self.invalid)} cannot run")
        return ", ".join(parts) + (f" ({self.error})" if self.error else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (verdict.json)."""
        return {
            "summary": self.summary(),
            "error": self.error,
            "results": [r.to_dict() for r in self.results],
        }


# Runs in the sandbox: argv[1] a JSON list of checks, argv[2] seconds per check, argv[3] the
# module, argv[4] seconds per check once one has timed out. Prints one marked JSON line per
# check as it finishes, so a crash or kill keeps what ran.
_CHILD = r"""
import ast, importlib, json, math, signal, sys
MARK = "@@ATOM-CHECK@@"
checks, per = json.loads(sys.argv[1]), float(sys.argv[2])
def out(data):
    sys.stdout.write("\n" + MARK + json.dumps(data) + "\n"); sys.stdout.flush()
def short(value):
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= 300 else text[:300] + "…"
def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        try:
            return a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except BaseException:
        return False
try:
    impl = importlib.import_module(sys.argv[3])
except BaseException as exc:
    out({"import_error": f"{type(exc).__name__}: {exc}"[:300]})
    raise SystemExit(0)
def located(exc):
    # The innermost frame of the code under test: its function and line (where to repair).
    path, found = getattr(impl, "__file__", None), None
    tb = exc.__traceback__
    while tb is not None:
        if path and tb.tb_frame.f_code.co_filename == path:
            found = tb
        tb = tb.tb_next
    if found is None:
        return {}
    import linecache
    code = found.tb_frame.f_code
    text = linecache.getline(path, found.tb_lineno).strip()[:160]
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    values = found.tb_frame.f_locals
    args = ", ".join(f"{n}={short(values[n])[:80]}" for n in names if n != "self" and n in values)
    return {"function": getattr(code, "co_qualname", code.co_name),
            "line": f"line {found.tb_lineno}: {text}", "arguments": args[:300]}
class CheckTimeout(BaseException):
    pass
def alarm(signum, frame):
    raise CheckTimeout()
signal.signal(signal.SIGALRM, alarm)
for i, check in enumerate(checks):
    ns = {k: v for k, v in vars(impl).items()}
    for name in check["modules"]:
        try:
            ns.setdefault(name, importlib.import_module(name))
        except BaseException:
            pass
    try:
        tree = ast.parse(check["call"], mode="exec")
        last = tree.body.pop()
        setup = compile(tree, "<check>", "exec")
        expr = compile(ast.Expression(last.value), "<check>", "eval")
        want_code = compile(check["expect"], "<expect>", "eval") if check["expect"] else None
    except BaseException as exc:
        out({"i": i, "status": "invalid", "reason": f"{type(exc).__name__}: {exc}"[:300]})
        continue
    signal.setitimer(signal.ITIMER_REAL, per)
    try:
        exec(setup, ns)
        got = eval(expr, ns)
        signal.setitimer(signal.ITIMER_REAL, 0)
        if check["raises"]:
            out({"i": i, "status": "failed", "got": short(got),
                 "reason": f"returned {short(got)} instead of raising {check['raises']}"})
            continue
        want = eval(want_code, ns)
        if same(got, want):
            out({"i": i, "status": "passed", "got": short(got)})
        else:
            out({"i": i, "status": "failed", "got": short(got),
                 "reason": f"expected {short(want)}, got {short(got)}"})
    except CheckTimeout as exc:
        out({"i": i, "status": "timeout", "reason": f"did not finish in {per:g} s (a loop?)",
             **located(exc)})
        per = min(per, float(sys.argv[4]))
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        names = [c.__name__ for c in type(exc).__mro__]
        wanted = check["raises"].split(".")[-1]
        got = f"{type(exc).__name__}: {exc}"[:300]
        if wanted and wanted in names:
            out({"i": i, "status": "passed", "got": got})
        else:
            reason = f"raised {got}" + (f" instead of {wanted}" if wanted else "")
            out({"i": i, "status": "error", "got": got, "reason": reason, **located(exc)})
"""


def run_contract(
    checks: Sequence[Check],
    *,
    staging: Path,
    runner: SandboxRunner,
    limits: Limits,
    python_path: Sequence[Path] | None = None,
    defines: Collection[str] = (),
    available: Collection[str] = (),
    per_check_s: float = PER_CHECK_SECONDS,
    module: str = "impl",
) -> ContractReport:
    """Run `checks` against ``staging/impl.py`` in the sandbox; never raises for the code.

    With `module` (a project's dotted module, importable from `python_path`) the checks run
    in that module's namespace instead, its private names included.
    """
    report, runnable = _triage(checks, defines=defines, available=available)
    if not runnable:
        return report
    if module == "impl" and not (staging / IMPL_FILE).is_file():
        report.error = "impl.py is missing"
        for i in runnable:
            report.results[i].reason = "impl.py is missing"
        return report
    payload = [
        {
            "call": checks[i].call,
            "expect": checks[i].expect.strip(),
            "raises": checks[i].raises.strip(),
            "modules": [n for n in free_names(checks[i].call) if n in _STDLIB],
        }
        for i in runnable
    ]
    budget = min(limits.timeout_s, per_check_s * len(runnable) + 10.0)
    run_limits = Limits(**{**limits.__dict__, "timeout_s": max(budget, 1.0)})
    after_loop = str(min(per_check_s, AFTER_LOOP_SECONDS))
    result = runner.run(
        [runner.python, "-c", _CHILD, json.dumps(payload), str(per_check_s), module, after_loop],
        cwd=staging,
        limits=run_limits,
        python_path=list(python_path or [staging]),
    )
    if _read_results(report, checks, runnable, result.output, module):
        _mark_unfinished(report, checks, runnable, result)
    return report


def _triage(
    checks: Sequence[Check], *, defines: Collection[str], available: Collection[str]
) -> tuple[ContractReport, list[int]]:
    """A report with each check invalid (why) or not run yet, and the indexes that can run."""
    report = ContractReport()
    runnable: list[int] = []
    for i, check in enumerate(checks):
        problems = check_problems(check, defines=defines, available=available)
        report.results.append(
            CheckResult(check, "invalid", reason="; ".join(problems))
            if problems
            else CheckResult(check, "not_run", reason="the check run ended before it")
        )
        if not problems:
            runnable.append(i)
    return report, runnable


def _read_results(
    report: ContractReport,
    checks: Sequence[Check],
    runnable: list[int],
    output: str,
    module: str,
) -> bool:
    """Fill `report` from the child's marked lines; False when the module raised on import."""
    for line in output.splitlines():
        at = line.find(_MARK)
        if at < 0:
            continue
        try:
            data = json.loads(line[at + len(_MARK) :])
        except ValueError:
            continue
        if "import_error" in data:
            where = "impl.py" if module == "impl" else module
            report.error = f"{where} raises on import: {data['import_error']}"
            for i in runnable:
                report.results[i] = CheckResult(checks[i], "error", reason=report.error)
            return False
        index = data.get("i")
        if not isinstance(index, int) or not 0 <= index < len(runnable):
            continue
        at_check = runnable[index]
        report.results[at_check] = CheckResult(
            checks[at_check],
            data.get("status", "error"),
            got=str(data.get("got", "")),
            reason=str(data.get("reason", "")),
            function=str(data.get("function", "")),
            line=str(data.get("line", "")),
            arguments=str(data.get("arguments", "")),
        )
    return True


def _mark_unfinished(
    report: ContractReport, checks: Sequence[Check], runnable: list[int], result: RunResult
) -> None:
    """The first check the run never reported on is the one it ended in: an error, with why."""
    unfinished = [i for i in runnable if report.results[i].status == "not_run"]
    if unfinished:
        why = (
            f"killed at the {result.limit_hit} limit"
            if result.limit_hit
            else f"the process ended (exit {result.exit_code}) during this check"
        )
        first = unfinished[0]
        report.results[first] = CheckResult(checks[first], "error", reason=why)
        report.error = report.error or f"the check run ended early: {why}"


def contract_tests(checks: Sequence[Check], *, module: str = "impl") -> str:
    """Plain pytest tests of `checks` (those that can run), importing from `module`."""
    names: dict[str, None] = {}
    bodies: list[str] = []
    modules: dict[str, None] = {}
    for n, check in enumerate(checks, 1):
        if check_problems(check):
            continue
        used = free_names(check.call + "\n" + (check.expect or "None"))
        for name in used:
            (modules if name in _STDLIB else names).setdefault(name, None)
        exc = check.raises.strip().split(".")[-1]
        if exc and not hasattr(builtins, exc):
            names.setdefault(exc, None)
        lines = check.call.strip("\n").splitlines()
        # Setup keeps its own nesting (a generated-input check defines functions).
        setup = textwrap.dedent("\n".join(lines[:-1])).splitlines()
        last = lines[-1].strip()
        body = [f"def test_check_{n}():", f"    # {check.describe()[:150]}"]
        body += [f"    {ln}" if ln.strip() else "" for ln in setup]
        if exc:
            body += [f"    with pytest.raises({exc}):", f"        {last}"]
        else:
            body.append(f"    assert _same({last}, {check.expect.strip()})")
        bodies.append("\n".join(body))
    head = [
        '"""Tests generated from the step\'s contract: its executable acceptance checks."""',
        "",
        "import math",
        *[f"import {m}" for m in modules if m != "math"],
        "",
        "import pytest",
        "",
    ]
    if names:
        head.append(f"from {module} import {', '.join(names)}")
    helper = (
        "def _same(a, b):\n"
        '    """Equal, with float tolerance; lists and tuples compare by items."""\n'
        "    if isinstance(a, float) or isinstance(b, float):\n"
        "        return a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)\n"
        "    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):\n"
        "        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))\n"
        "    if isinstance(a, dict) and isinstance(b, dict):\n"
        "        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)\n"
        "    return a == b"
    )
    return "\n".join(head) + "\n\n\n" + helper + "\n\n\n" + "\n\n\n".join(bodies) + "\n"
