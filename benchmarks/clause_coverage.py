"""Clause coverage: the share of a task's clauses code gives at least one check, per task set.

    nice -n 19 .venv/bin/python benchmarks/clause_coverage.py
    nice -n 19 .venv/bin/python benchmarks/clause_coverage.py --unchecked devtasks paraphrases

Clauses and their checks come from the planner's own functions (``task_names`` then
``task_clauses``), so the figures are what a run's plan holds; no model is involved. Sets: the
development tasks (``tasks.jsonl``, field ``task``), the HumanEval prompts as the evaluation
runner words them (``task_text``), and the devtasks reworded (``paraphrases/devtasks.jsonl``,
when present). Printed per set and overall: clauses, covered (at least one check), coverage;
then how many clauses each rule fired on, and how many checks each criterion gave.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from atom_agent.nodes.planner import task_names  # noqa: E402
from atom_agent.state import Clause  # noqa: E402
from atom_agent.verification.clauses import task_clauses  # noqa: E402

DEVTASKS = ROOT.parent / "shared" / "devtasks" / "tasks.jsonl"
PARAPHRASES = ROOT / "tests" / "data" / "paraphrases" / "devtasks.jsonl"


@dataclass
class Figures:
    """One set's counts."""

    tasks: int = 0
    clauses: int = 0
    covered: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    """Clauses each rule fired on."""
    criteria: Counter[str] = field(default_factory=Counter)
    """Checks of each criterion."""
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    """(task id, clause text) of every clause with no check."""

    def add(self, other: Figures) -> None:
        self.tasks += other.tasks
        self.clauses += other.clauses
        self.covered += other.covered
        self.rules.update(other.rules)
        self.criteria.update(other.criteria)
        self.unchecked += other.unchecked

    def line(self, name: str) -> str:
        share = self.covered / self.clauses if self.clauses else 0.0
        return (
            f"{name:<12} tasks {self.tasks:>4}  clauses {self.clauses:>4}  "
            f"covered {self.covered:>4}  coverage {share:6.1%}"
        )


def clauses_of(task: str) -> list[Clause]:
    """The task's clauses with their checks, found as the planner finds them."""
    return task_clauses(task, names=task_names(task))


def measure(tasks: list[tuple[str, str]]) -> Figures:
    """Coverage figures of (id, task text) pairs."""
    out = Figures(tasks=len(tasks))
    for task_id, task in tasks:
        for clause in clauses_of(task):
            out.clauses += 1
            out.covered += bool(clause.checks)
            # Rule names are recorded on the clause since the rule table; none before it.
            out.rules.update(set(getattr(clause, "rules", []) or []))
            out.criteria.update(c.criterion for c in clause.checks)
            if not clause.checks:
                out.unchecked.append((task_id, clause.text))
    return out


def read_jsonl(path: Path) -> list[tuple[str, str]]:
    """(id, task) of each line of a tasks file."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(str(r["id"]), str(r["task"])) for r in rows]


def humaneval_tasks() -> list[tuple[str, str]]:
    """Every HumanEval problem, worded as the evaluation runner gives it to the agent."""
    from atom_agent.evals.humaneval import load_problems, task_text

    return [(p.task_id, task_text(p)) for p in load_problems(None)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devtasks", type=Path, default=DEVTASKS)
    parser.add_argument("--paraphrases", type=Path, default=PARAPHRASES)
    parser.add_argument(
        "--unchecked", nargs="*", default=[], help="sets whose unchecked clauses to print"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args()
    sets: dict[str, list[tuple[str, str]]] = {"devtasks": read_jsonl(args.devtasks)}
    sets["humaneval"] = humaneval_tasks()
    if args.paraphrases.exists():
        sets["paraphrases"] = read_jsonl(args.paraphrases)
    figures = {name: measure(tasks) for name, tasks in sets.items()}
    overall = Figures()
    for f in figures.values():
        overall.add(f)
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "tasks": f.tasks,
                        "clauses": f.clauses,
                        "covered": f.covered,
                        "rules": dict(f.rules),
                    }
                    for name, f in {**figures, "overall": overall}.items()
                },
                indent=1,
            )
        )
        return
    for name, f in figures.items():
        print(f.line(name))
    print(overall.line("overall"))
    if not args.paraphrases.exists():
        print(f"(no paraphrase set at {args.paraphrases})")
    print("\nrules (clauses fired on, per set):")
    names = sorted(overall.rules, key=lambda r: (-overall.rules[r], r))
    for rule in names or ["(no named rules)"]:
        per_set = "  ".join(f"{n} {f.rules[rule]:>3}" for n, f in figures.items())
        print(f"  {rule:<28} {per_set}")
    print("\nchecks per criterion:")
    for criterion, n in overall.criteria.most_common():
        print(f"  {n:>5}  {criterion}")
    for name in args.unchecked:
        print(f"\nunchecked clauses of {name}:")
        for task_id, text in figures[name].unchecked:
            print(f"  [{task_id}] {' '.join(text.split())[:150]}")


if __name__ == "__main__":
    main()
