"""A standing rule that states a shape becomes checks that a rule-keeping module passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from atom_agent.checks.contract import run_contract
from atom_agent.rule_text import RULES_HEADER, with_rules
from atom_agent.sandbox import Limits, default_runner
from atom_agent.state import Check
from atom_agent.verification.clauses import placed, task_clauses
from atom_agent.verification.standing import (
    MESSAGE_NAMES_ARGUMENT,
    RULE_CRITERION,
    Signature,
    message_check,
    standing_checks,
)

RUNNER = default_runner()
LIMITS = Limits(timeout_s=30)

KW_ONLY = "From now on every optional parameter is keyword-only."
SECTION = (
    "Going forward every public function's docstring has a 'Params:' section naming each of "
    "its parameters."
)
DOCTEST = "In this project every docstring carries a doctest example that passes."
EXC = "From now on a bad input raises ShapeError, a subclass of ValueError that the module defines."
HINTS = "Please add type hints to every function you write here, its return value included."

KEEPS = '''
class ShapeError(ValueError):
    pass


def scale(values: list[int], *, factor: "int" = 2) -> list[int]:
    """Scale the values.

    Params:
        values: the numbers.
        factor: the multiplier.

    >>> scale([1, 2])
    [2, 4]
    """
    return [v * factor for v in values]
'''
BREAKS = '''
class ShapeError(Exception):
    pass


def scale(values, factor=2):
    """Scale the values.

    >>> scale([1, 2])
    [2, 5]
    """
    return [v * factor for v in values]
'''


def _run(tmp_path: Path, source: str, rule: str) -> list[str]:
    staging = tmp_path / source[:20].strip().replace(" ", "_").replace("\n", "_")
    staging.mkdir(exist_ok=True)
    (staging / "impl.py").write_text(source)
    checks = standing_checks(rule, ["scale"])
    assert checks and all(c.criterion == RULE_CRITERION for c in checks)
    report = run_contract(checks, staging=staging, runner=RUNNER, limits=LIMITS,
                          defines=["scale", "ShapeError"])  # fmt: skip
    return [r.status for r in report.results]


@pytest.mark.parametrize("rule", [KW_ONLY, SECTION, DOCTEST, EXC, HINTS])
def test_a_rule_keeping_module_passes_and_a_rule_breaking_one_fails(
    tmp_path: Path, rule: str
) -> None:
    assert set(_run(tmp_path, KEEPS, rule)) == {"passed"}
    assert "passed" not in _run(tmp_path, BREAKS, rule)


def test_rules_that_state_no_shape_or_withdraw_one_give_no_check() -> None:
    assert standing_checks("From now on amounts are integers in cents.", ["scale"]) == []
    assert standing_checks("Doctest examples in docstrings are no longer required.", ["f"]) == []


def test_a_carried_rule_is_a_clause_with_its_checks_and_the_heading_is_none() -> None:
    block = f"{RULES_HEADER}\n- {KW_ONLY}\n- Amounts are integers in cents."
    task = with_rules(
        "Write scale(values: list, factor: int = 2) that multiplies each value.", block
    )
    clauses = task_clauses(task, names=["scale"])
    assert [c.id for c in clauses] == [f"c{i}" for i in range(1, len(clauses) + 1)]
    assert not any(c.text.startswith("Standing rules of this project") for c in clauses)
    (rule,) = [c for c in clauses if "keyword-only" in c.text]
    assert "standing_rule" in rule.rules and rule.checks[0].criterion == RULE_CRITERION
    assert all(c.clause == rule.id for c in rule.checks)
    (cents,) = [c for c in clauses if "cents" in c.text]
    assert cents.checks == []  # carried, not checked


def test_a_rule_asking_two_things_is_a_clause_per_demand_each_with_its_own_checks() -> None:
    """A check of one demand never sits in (and verifies) the clause of the other."""
    rule = (
        "From now on every function of this project is fully type-annotated, and every optional "
        "parameter is keyword-only (declared after a bare *, e.g. 'f(a, *, b=1)')."
    )
    for task in (
        with_rules("Write scale(values: list, factor: int = 2).", f"{RULES_HEADER}\n- {rule}"),
        f"{rule} Write scale(values: list, factor: int = 2).",  # stated in the task itself
    ):
        clauses = task_clauses(task, names=["scale"])
        annotated, kw_only = [c for c in clauses if "standing_rule" in c.rules or "type-" in c.text]
        assert annotated.text.endswith("fully type-annotated")
        assert kw_only.text.startswith("every optional parameter")  # the bracket is not cut
        for clause, shows in ((annotated, "p.annotation"), (kw_only, "KEYWORD_ONLY")):
            (check,) = clause.checks
            assert check.criterion == RULE_CRITERION and shows in check.call


def test_a_sentence_stating_two_rules_at_once_gives_each_its_checks_in_its_own_task() -> None:
    task = (
        "Rules for every function of this project from now on: every optional parameter is "
        "keyword-only, and a function that returns several values returns them as a tuple. "
        "Write scale(values: list, factor: int = 2) that multiplies each value."
    )
    clauses = task_clauses(task, names=["scale"])
    rules = [c for c in clauses if "standing_rule" in c.rules]
    assert [c.text.split(":")[-1].split()[:3] for c in rules] == [
        ["every", "optional", "parameter"], ["a", "function", "that"]]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "returns"),
    [
        ("Every public function is fully type-annotated.", True),
        ("From now on all code uses type annotations.", True),
        ("Annotate each parameter with its type.", False),
        ("Parameters carry type hints.", False),
    ],
)
def test_an_annotation_rule_checks_parameters_and_the_result_as_it_says(
    tmp_path: Path, rule: str, returns: bool
) -> None:
    """`self` needs no annotation; a missing return annotation fails only a rule that asks it."""
    params_only = KEEPS.replace(") -> list[int]:", "):")
    assert set(_run(tmp_path, params_only, rule)) == ({"failed"} if returns else {"passed"})
    assert set(_run(tmp_path, KEEPS.replace("values: list[int]", "values"), rule)) == {"failed"}


def test_a_rule_that_every_function_has_a_docstring_fails_one_without(tmp_path: Path) -> None:
    rule = "Each public function of this module carries a docstring."
    assert set(_run(tmp_path, KEEPS, rule)) == {"passed"}
    bare = (
        'def scale(values: list[int], *, factor: "int" = 2) -> list[int]:\n'
        "    return [v * factor for v in values]\n"
    )
    assert set(_run(tmp_path, bare, rule)) == {"failed"}
    for waived in ("Docstrings are optional in this project.", "Functions here need no docstrings.",
                   "Keep docstrings to one line."):  # fmt: skip
        assert standing_checks(waived, ["scale"]) == []


@pytest.mark.parametrize(
    ("rule", "keeps", "breaks"),
    [
        ("We always log with the logging module and never print.",
         "import logging\n\ndef scale(v):\n    logging.getLogger(__name__).debug(v)\n"
         "    return v * 2\n",
         "def scale(v):\n    print(v)\n    return v * 2\n"),
        ("Use pathlib instead of os.path from now on.",
         "from pathlib import Path\n\ndef scale(v):\n    return Path(str(v)).name\n",
         "from os import path\n\ndef scale(v):\n    return path.basename(str(v))\n"),
        ("Never call `eval` on user input.",
         "import ast\n\ndef scale(v):\n    return ast.literal_eval(v)\n",
         "def scale(v):\n    return eval(v)\n"),
    ],
)  # fmt: skip
def test_a_rule_that_forbids_a_call_or_module_fails_the_module_that_uses_it(
    tmp_path: Path, rule: str, keeps: str, breaks: str
) -> None:
    assert _run(tmp_path, keeps, rule) == ["passed"]
    assert _run(tmp_path, breaks, rule) == ["failed"]


def test_a_rule_whose_words_name_no_code_gives_no_check_of_code() -> None:
    for rule in ("Never use global state.", "Return a tuple, not a list.", "Never print secrets.",
                 "No input validation is needed in helpers.",
                 "In this codebase we use f-strings, never % formatting."):  # fmt: skip
        assert standing_checks(rule, ["scale"]) == [], rule


def test_a_rule_that_waives_annotations_asks_for_none() -> None:
    waived = ("Type hints are no longer required.", "We do not use type hints here.",
              "Type hints are optional in this project.", "No type hints in scripts.")  # fmt: skip
    for rule in waived:
        assert standing_checks(rule, ["scale"]) == []


def test_a_section_that_must_name_each_parameter_fails_when_one_is_missing(tmp_path: Path) -> None:
    missing = KEEPS.replace("        factor: the multiplier.\n", "")
    assert set(_run(tmp_path, missing, SECTION)) == {"failed"}
    assert set(_run(tmp_path, missing, "Every docstring has a 'Params:' section.")) == {"passed"}


CALLS_KEEP = """
def pick(items: list, count: int = 1):
    if count < 0:
        raise KeyError("count: must not be negative")
    return tuple(items[:count])
"""
CALLS_BREAK = """
def pick(items: list, count: int = 1):
    items.append(0)
    if count < 0:
        raise ValueError("must not be negative")
    return items[:count]
"""
PICK = Signature(name="pick", params=("items", "count"), annotations=("list", "int"),
                 defaults=(None, "1"))  # fmt: skip


@pytest.mark.parametrize(
    "rule",
    [
        "From now on a negative count raises KeyError.",
        "Every function of this project returns several values as a tuple, never as a list.",
        "From now on functions never modify the lists they are given.",
    ],
)
def test_rules_about_calls_check_a_valid_call_changed_as_the_rule_says(
    tmp_path: Path, rule: str
) -> None:
    checks = standing_checks(rule, ["pick"], {"pick": PICK})
    assert len(checks) == 1
    for source, want in ((CALLS_KEEP, "passed"), (CALLS_BREAK, "failed")):
        staging = tmp_path / want
        staging.mkdir(exist_ok=True)
        (staging / "impl.py").write_text(source)
        report = run_contract(checks, staging=staging, runner=RUNNER, limits=LIMITS,
                              defines=["pick"])  # fmt: skip
        assert [r.status == "passed" for r in report.results] == [want == "passed"]


def test_an_error_message_rule_checks_the_changed_argument_leads_the_message(
    tmp_path: Path,
) -> None:
    (raising,) = standing_checks("From now on a negative count raises KeyError.", ["pick"],
                                 {"pick": PICK})  # fmt: skip
    check = message_check(raising, PICK)
    assert check is not None and MESSAGE_NAMES_ARGUMENT.search(
        "an invalid argument raises ValueError whose message starts with the argument's name"
    )
    for source, want in ((CALLS_KEEP, "passed"), (CALLS_BREAK, "failed")):
        staging = tmp_path / want
        staging.mkdir(exist_ok=True)
        (staging / "impl.py").write_text(source)
        report = run_contract([check], staging=staging, runner=RUNNER, limits=LIMITS,
                              defines=["pick"])  # fmt: skip
        assert [r.status == "passed" for r in report.results] == [want == "passed"]


def test_a_model_check_filed_under_a_rule_it_does_not_execute_verifies_no_rule() -> None:
    """A check of what a function computes, labelled with a rule's clause, leaves that clause."""
    block = (
        f"{RULES_HEADER}\n- Every public function is fully type-annotated.\n"
        "- From now on a negative count raises KeyError."
    )
    task = with_rules("Write pad(text, count) that appends count dots to text.", block)
    clauses = task_clauses(task, names=["pad"])
    annotated = next(c for c in clauses if "type-annotated" in c.text)
    negative = next(c for c in clauses if "negative count" in c.text)

    def model(call: str, clause: str, expect: str = "", raises: str = "") -> Check:
        return Check(call=call, expect=expect, raises=raises, clause=clause, origin="planner")

    moved = placed(model("pad('a', count=2)", annotated.id, "'a..'"), task, clauses)
    assert moved.clause != annotated.id
    # Nor by a parameter's name the rule happens to use.
    assert placed(model("pad('a', count=2)", "", "'a..'"), task, clauses).clause != negative.id
    kept = placed(model("pad('a', count=-1)", negative.id, raises="KeyError"), task, clauses)
    assert kept.clause == negative.id
