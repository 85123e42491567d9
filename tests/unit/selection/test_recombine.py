"""Recombination: the best candidate with functions taken from others, kept only if it runs better.

The real sandbox runs every trial; the candidates are what a small model writes (each right in a
different place).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from atom_agent.checks.contract import CheckResult, ContractReport, run_contract
from atom_agent.sandbox import Limits, default_runner
from atom_agent.selection.rank import rank
from atom_agent.selection.recombine import Scored, exercised, recombine, transplant
from atom_agent.state import Check

STACK = """class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        if not self.items:
            raise IndexError("empty")
        return self.items.pop()

    def peek(self):
        return self.items[-1]

    def __len__(self):
        return len(self.items)
"""
# The plain answer: pop takes from the wrong end. A sample: peek is wrong, pop right.
WRONG_POP = STACK.replace("return self.items.pop()", "return self.items.pop(0)")
WRONG_PEEK = STACK.replace("return self.items[-1]", "return self.items[0]")

CHECKS = [
    Check(call="s = Stack()\ns.push(1)\ns.push(2)\ns.pop()", expect="2", origin="task"),
    Check(call="s = Stack()\ns.push(1)\ns.push(2)\ns.peek()", expect="2", origin="task"),
    Check(call="s = Stack()\ns.push(1)\nlen(s)", expect="1", origin="task"),
    Check(call="Stack().pop()", raises="IndexError", origin="task"),
]


class Judge:
    """Runs CHECKS on a module in the sandbox, in a fresh folder each time; counts the runs."""

    def __init__(self, root: Path, checks: list[Check] = CHECKS) -> None:
        self.root, self.checks, self.runs = root, checks, 0
        self._n = itertools.count()

    def __call__(self, source: str) -> ContractReport:
        self.runs += 1
        folder = self.root / str(next(self._n))
        folder.mkdir(parents=True)
        (folder / "impl.py").write_text(source)
        return run_contract(
            self.checks, staging=folder, runner=default_runner(), limits=Limits(timeout_s=30.0)
        )

    def scored(self, source: str) -> Scored:
        return Scored(source, self(source))


def test_the_method_a_failing_check_exercises_comes_from_a_candidate_that_passes_it(
    tmp_path: Path,
) -> None:
    judge = Judge(tmp_path)
    base, donor = judge.scored(WRONG_POP), judge.scored(WRONG_PEEK)
    assert rank(base.report) == rank(donor.report) == (3, 0, 3)  # neither wins whole

    found = recombine(base, [donor], judge)

    assert found is not None and found.report.all_passed()
    assert found.source == STACK  # base with the donor's pop: exactly the right class
    assert judge.runs == 3  # two candidates, one trial


def test_nothing_is_returned_when_no_trial_runs_better(tmp_path: Path) -> None:
    judge = Judge(tmp_path)
    base = judge.scored(WRONG_POP)
    # The donor fails the same check with the same pop: there is nothing to take from it.
    same_bug = WRONG_POP.replace("def peek(self):", "def peek(self):\n        x = 1")
    assert recombine(base, [judge.scored(same_bug)], judge) is None
    # A donor that passes nothing base fails is never tried either.
    assert judge.runs == 2


def test_a_method_reading_state_the_class_never_sets_brings_the_donors_init(
    tmp_path: Path,
) -> None:
    base = """class Tally:
    def __init__(self):
        self.counts = {}

    def add(self, word):
        self.counts[word] = self.counts.get(word, 0) + 1

    def total(self):
        return sum(self.counts.values()) + 1
"""
    donor = """class Tally:
    def __init__(self):
        self.counts = {}
        self.start = 0

    def add(self, word):
        self.counts[word] = 1

    def total(self):
        return self.start + sum(self.counts.values())
"""
    checks = [
        Check(call="t = Tally()\nt.add('a')\nt.add('a')\nt.total()", expect="2", origin="task"),
        Check(call="t = Tally()\nt.add('a')\nt.add('a')\nt.counts['a']", expect="2"),
        Check(call="Tally().total()", expect="0", origin="task"),
    ]
    judge = Judge(tmp_path, checks)
    found = recombine(judge.scored(base), [judge.scored(donor)], judge)

    # The donor's total alone reads self.start, which base's class never sets (it raises);
    # with the donor's __init__ as well it runs, and base's add is kept.
    assert found is not None and found.report.all_passed()
    assert "self.start = 0" in found.source and "self.counts.get(word, 0) + 1" in found.source
    assert judge.runs == 4  # two candidates, two trials


def test_helpers_and_methods_the_transplanted_code_calls_come_along() -> None:
    base = (
        "def total(xs):\n    return sum(xs) + 1\n\n\n"
        "def mean(xs):\n    return total(xs) / len(xs)\n"
    )
    donor = (
        "import math\n\n\ndef _clean(xs):\n    return [x for x in xs if not math.isnan(x)]\n\n\n"
        "def total(xs):\n    return sum(_clean(xs))\n"
    )
    mixed = transplant(base, donor, ["total"])
    assert mixed is not None
    assert "import math" in mixed and "def _clean(xs)" in mixed and "sum(_clean(xs))" in mixed
    assert "def mean(xs)" in mixed
    namespace: dict[str, object] = {}
    exec(compile(mixed, "impl.py", "exec"), namespace)  # noqa: S102 - our own test module
    assert namespace["mean"]([1.0, 3.0, float("nan")]) == 4.0 / 3  # type: ignore[operator]

    cls = "class C:\n    def f(self):\n        return 1\n"
    helped = (
        "class C:\n    def f(self):\n        return self._g() + 1\n\n"
        "    def _g(self):\n        return 1\n"
    )
    mixed = transplant(cls, helped, ["C.f"])
    assert mixed is not None and "def _g(self)" in mixed
    namespace = {}
    exec(compile(mixed, "impl.py", "exec"), namespace)  # noqa: S102 - our own test module
    assert namespace["C"]().f() == 2  # type: ignore[operator]


def test_a_check_exercises_what_it_raises_in_first_then_every_method_it_names() -> None:
    functions = ["Stack.__init__", "Stack.push", "Stack.pop", "Stack.peek", "Stack.__len__"]
    result = CheckResult(check=CHECKS[0], status="failed", got="1")
    assert exercised(result, functions)[:1] == ["Stack.pop"]
    assert set(exercised(result, functions)) == {"Stack.pop", "Stack.__init__", "Stack.push"}
    raised = CheckResult(check=CHECKS[2], status="error", function="Stack.push")
    assert exercised(raised, functions)[0] == "Stack.push"
    assert "Stack.__len__" in exercised(raised, functions)


def test_trials_stop_at_the_cap(tmp_path: Path) -> None:
    judge = Judge(tmp_path)
    base = judge.scored(WRONG_POP)
    # Many donors pass the failing check, each with a pop that breaks another check.
    donors = [
        judge.scored(WRONG_PEEK.replace("raise IndexError", f"raise KeyError  # {i}"))
        for i in range(5)
    ]
    before = judge.runs
    found = recombine(base, donors, judge, max_trials=2)
    assert judge.runs - before <= 2
    assert found is None or rank(found.report) > rank(base.report)


def test_an_attempt_recombines_its_candidates_with_no_model_call(
    tmp_path: Path,
) -> None:
    from langchain_core.messages import AIMessage

    from atom_agent.selection.drafts import write_drafts
    from atom_agent.testing import ScriptedChatModel

    model = ScriptedChatModel(
        respond=lambda messages: AIMessage(content=f"```python\n{WRONG_PEEK}```"),
        model_name="qwen2.5-coder:1.5b",
    )
    drafts = write_drafts(
        model=model, prompt="Write a Stack class.", temperature=0.0, checks=CHECKS,
        task="Write a Stack class.", defines=["Stack"], available=[], folder=tmp_path,
        python_path=[], runner=default_runner(), limits=Limits(timeout_s=30.0), witnesses=2,
        first=WRONG_POP,
    )  # fmt: skip

    # Candidate zero and both witnesses fail one check each; recombined, they pass them all,
    # with no call of their own: two calls in all (the witnesses).
    assert len(model.calls) == 2
    best = drafts.best
    assert best is not None and best.origin == "recombined" and drafts.passes(best)
    assert best.source == STACK and best.informed
    assert best.path is not None and (best.path / "impl.py").read_text() == STACK
    assert drafts.trials == 1
