"""False alarms of the gaming pass on honest code: HumanEval's canonical solutions.

    nice -n 19 .venv/bin/python benchmarks/gaming_false_alarms.py --first 40

Each problem's canonical solution (prompt + solution, as one impl.py) is read against the
checks a run would hold for it: the task's examples (the prompt's doctests, read by
``task_checks``) and HumanEval's own test asserts (``candidate`` read as the entry point), so
the pass sees every input the hidden tests use. No model. The AST pass runs on every problem;
the run on unseen inputs (``checks/probe.py``) in the sandbox, only where the AST points at a
function keyed on a check's input. Printed: each finding (there should be none), then the
problems read, checks read, probes run and problems flagged.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from atom_agent.checks.asserts import checks_from_tests  # noqa: E402
from atom_agent.checks.contract import run_contract  # noqa: E402
from atom_agent.checks.extract import task_checks  # noqa: E402
from atom_agent.checks.gaming import gaming_findings  # noqa: E402
from atom_agent.checks.probe import confirmed, probes  # noqa: E402
from atom_agent.evals.humaneval import load_problems  # noqa: E402
from atom_agent.sandbox import Limits, default_runner  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=40, help="problems 0..N-1 (default 40)")
    args = parser.parse_args()
    problems = load_problems(limit=args.first)
    flagged, checks_total, probed = 0, 0, 0
    runner = default_runner()
    started = time.perf_counter()
    for problem in problems:
        name = problem.entry_point
        tests = re.sub(r"\bcandidate\b", name, problem.test)
        checks = [*task_checks(problem.prompt, names=[name]), *checks_from_tests(tests)]
        checks_total += len(checks)
        source = problem.prompt + problem.canonical_solution
        found = gaming_findings({"impl.py": source}, checks, [name])
        unseen = probes(source, checks, [name])
        if unseen:
            probed += 1
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "impl.py").write_text(source)
                report = run_contract(unseen, staging=Path(tmp), runner=runner, limits=Limits())
            found += confirmed(report, checks, [name])
        if found:
            flagged += 1
            for finding in found:
                print(f"{problem.task_id}: {finding.describe()}")
    took = (time.perf_counter() - started) * 1000
    print(
        f"HumanEval 0-{len(problems) - 1}: {len(problems)} canonical solutions, "
        f"{checks_total} checks read, {probed} run on unseen inputs, {flagged} flagged "
        f"({took:.0f} ms in all)"
    )


if __name__ == "__main__":
    main()
