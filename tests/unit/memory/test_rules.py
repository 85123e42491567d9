"""Standing rules: found by what they say, remembered once, superseded with provenance, carried."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atom_agent.memory import MemoryManager
from atom_agent.memory.records import MemoryRecord, MemoryType, SourceType
from atom_agent.memory.rules import in_force, record_rules, rules_block
from atom_agent.rule_text import (
    RULES_HEADER,
    Retraction,
    StatedRule,
    carried_rules,
    find_rules,
    own_task,
    with_rules,
)
from atom_agent.session import SessionContext

# Wordings of our own (not the development streams'): each states a rule beyond the task.
RULE_WORDINGS = [
    "Going forward, every public function logs its arguments at debug level.",
    "In this codebase, timestamps are always timezone-aware UTC datetimes.",
    "Henceforth all functions return None instead of raising on a missing key.",
    "Our team's convention: names of private helpers start with an underscore.",
    "Every method of this library validates its inputs before doing any work.",
    "For all future tasks, use pathlib rather than os.path.",
    "Until further notice, configuration is read from environment variables only.",
    "This holds for this request and each later one: log lines are JSON objects.",
    "What follows applies to all upcoming work too: every cache key is a tuple.",
    "Please make sure that from here on out every public class has a __repr__.",
    "Make it a habit: every function gets type hints.",
    "For the rest of this project, functions must not touch global state.",
    "Across the whole package, errors are reported by raising, never by returning None.",
    # By habit: what the team always does, whenever it writes code, or what its rule is.
    "We always log with the logging module and never print.",
    "We prefer dataclasses over plain dicts for records.",
    "Our convention is to name the offending parameter first in an error message.",
    "The team never mutates the inputs given to a function.",
    "Whenever you write a function, give it an Examples section in its docstring.",
    "Each time you add code, add doctests that run.",
    # An imperative that says it holds for later work is a rule, not this task's request.
    "Please write a docstring for every function from now on.",
    "Add a type hint to every parameter going forward.",
    "Return None on a missing key in every lookup from here on.",
]
# The task's own requirements: never rules.
REQUIREMENTS = [
    "Write median(values: list[float]) -> float that returns the middle value.",
    "The function raises ValueError when values is empty.",
    "A negative width is invalid.",
    "It always returns a new list, never the one it was given.",
    "Include pytest tests.",
    "Now implement Cache.get(key) and Cache.put(key, value).",
    "Make the function return an empty dict for an empty text.",
    "Please make sure the result is sorted.",
    # What one piece of the project does now describes it; it is no rule for later work.
    "In this project, `fmt.render(x)` raises NotImplementedError.",
    "In this codebase, the helper `Cache.evict()` fails on an empty cache.",
    # "following" and "next" that point inside the task are no time scope.
    "Handle all following cases: an empty list, a list of one item.",
    "The next function in the file calls this one.",
    # What happens (a bug report) is no habit; "whenever" about the input is the task's own.
    "We always get a KeyError when the file is empty.",
    "Whenever the input is empty, the function returns zero.",
    # An imperative over the project, with no word of later work, asks for code now.
    "Add type hints to all functions in this project.",
    # Naming a rule is no scope unless the sentence withdraws or changes it.
    "A year is a leap year by the rule about divisibility by four.",
    "As a rule, the first match wins.",
]


@pytest.mark.parametrize("text", RULE_WORDINGS)
def test_a_rule_is_found_in_any_wording(text: str) -> None:
    found = find_rules(f"{text} Write area(w, h) that multiplies its sides. Include pytest tests.")
    assert [type(s) for s in found] == [StatedRule]
    assert found[0].text.rstrip(".") in text


@pytest.mark.parametrize("text", REQUIREMENTS)
def test_a_task_requirement_is_not_a_rule(text: str) -> None:
    assert find_rules(text) == []


def test_a_heading_of_rules_splits_into_one_rule_each_with_its_scope() -> None:
    found = find_rules(
        "House rules for every module of this service from now on: durations are floats in "
        "seconds, and an unknown option raises KeyError naming the option; its message lists "
        "the known ones. Now write parse_timeout(text) -> float. Include pytest tests."
    )
    texts = [s.text for s in found]
    assert len(texts) == 2
    assert texts[0].startswith("House rules for every module of this service from now on: ")
    assert texts[0].endswith("durations are floats in seconds")
    assert "KeyError" in texts[1] and "its message lists the known ones" in texts[1]


def test_a_change_and_a_withdrawal_are_told_apart() -> None:
    change = find_rules("From now on an unknown option raises LookupError instead of KeyError.")
    assert change == [StatedRule(change[0].text, changes=True)]
    gone = find_rules("A correction to the logging rule: debug logs are no longer required.")
    assert gone and isinstance(gone[0], Retraction)
    assert find_rules("The rule about durations stays.") == []


@pytest.mark.parametrize(
    "text",
    [
        "Change of plan for all later work: money is now stored as Decimal, not int cents.",
        "Actually, from now on errors should be raised as AppError rather than ValueError.",
        "Update to our rules: every public function now logs at info level, not debug.",
        "From this task on, we switch from ValueError to AppError for bad input.",
    ],
)
def test_a_change_is_found_in_any_wording(text: str) -> None:
    found = find_rules(text)
    assert [(type(s), getattr(s, "changes", None)) for s in found] == [(StatedRule, True)]


@pytest.mark.parametrize(
    "text",
    [
        "Forget the rule about doctests.",
        "The earlier rule about UTC timestamps no longer applies.",
        "Going forward, type hints are optional.",
    ],
)
def test_a_withdrawal_is_found_in_any_wording(text: str) -> None:
    assert [type(s) for s in find_rules(text)] == [Retraction]


@pytest.mark.parametrize(
    "text",
    [
        "Scratch the doctest rule from before; from now on examples go in an Examples section.",
        "Ignore what I said before about logging; from now on use print.",
    ],
)
def test_a_withdrawal_then_a_new_rule_in_one_sentence_are_two_statements(text: str) -> None:
    assert [type(s) for s in find_rules(text)] == [Retraction, StatedRule]


def test_every_line_of_a_conventions_file_is_a_rule() -> None:
    found = find_rules("Use type hints.\nPrefer dataclasses over dicts.", every_line=True)
    assert [s.text for s in found] == ["Use type hints.", "Prefer dataclasses over dicts."]
    # A conventions file's imperatives say how the project works: each is a rule.
    found = find_rules("- Write tests with pytest.\n- Add a docstring to public functions.",
                       every_line=True)  # fmt: skip
    assert [s.text for s in found] == ["Write tests with pytest.",
                                       "Add a docstring to public functions."]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "Standing rules for every function of this project from now on: durations are floats "
        "in seconds, and an unknown option raises KeyError naming the option.",
        # Without a heading too: a sentence that asks two things is two rules.
        "Every public function of this service keeps durations as floats in seconds, and an "
        "unknown option raises KeyError naming the option.",
    ],
)
def test_rules_are_remembered_once_and_a_change_supersedes_with_provenance(
    manager: MemoryManager, text: str
) -> None:
    first = SessionContext(session_id="r1", project_id="p", run_id="r1")
    stated = find_rules(text)
    assert len(stated) == 2 and "durations" in stated[0].text and "KeyError" not in stated[0].text
    assert stated[1].text.endswith(": an unknown option raises KeyError naming the option") or (
        stated[1].text == "an unknown option raises KeyError naming the option"
    )
    done = record_rules(manager, first, stated, origin="task")
    assert len(done.written) == 2
    for record in done.written:
        assert record.type is MemoryType.CONVENTION and record.source_type is SourceType.USER
        assert record.run_id == "r1"
    again = record_rules(manager, first, stated, origin="task")  # a re-run node: nothing new
    assert again.written == [] and len(again.unchanged) == 2

    second = SessionContext(session_id="r2", project_id="p", run_id="r2")
    change = find_rules(
        "A change to this project's rules: from now on an unknown option raises LookupError "
        "instead of KeyError."
    )
    moved = record_rules(manager, second, change, origin="task")
    old_error = done.written[1]
    assert moved.superseded == [(old_error.id, moved.written[0].id)]
    force = in_force(manager, second)
    assert [r.id for r in force] == [done.written[0].id, moved.written[0].id]
    chain = manager.history(second, moved.written[0].id)
    assert [r.id for r in chain] == [old_error.id, moved.written[0].id]
    assert manager.get(second, old_error.id).supersede_reason == "changed by the user (task)"


def test_a_withdrawal_then_its_replacement_link_the_chain(manager: MemoryManager) -> None:
    s1 = SessionContext(session_id="a", project_id="p", run_id="a")
    docs, count = record_rules(
        manager,
        s1,
        find_rules(
            "Rules for every public function from now on: its docstring shows an example call, "
            "and a negative size raises ValueError."
        ),
        origin="task",
    ).written
    s2 = SessionContext(session_id="b", project_id="p", run_id="b")
    done = record_rules(
        manager,
        s2,
        find_rules(
            "A correction to the docstring rule: example calls are no longer required. "
            "Instead, from now on every public function's docstring has a Returns: section. "
            "The rule about negative sizes stays."
        ),
        origin="task",
    )
    assert len(done.written) == 1 and "Returns:" in done.written[0].content
    assert done.superseded == [(docs.id, done.written[0].id)]
    assert {r.id for r in in_force(manager, s2)} == {count.id, done.written[0].id}
    assert manager.get(s2, docs.id).superseded_by == done.written[0].id


def _rule(i: int, text: str) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}", content=text, type=MemoryType.CONVENTION, confidence=1.0,
        source_type=SourceType.USER, rationale=None, importance=1.0, project_id="p",
        session_id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
    )  # fmt: skip


def test_the_block_keeps_the_newest_rules_within_its_budget_and_never_a_duplicate() -> None:
    rules = [_rule(i, f"rule number {i} " + "word " * 20) for i in range(10)]
    rules.append(_rule(10, rules[9].content))  # the same words again
    block, ids = rules_block(rules, budget_tokens=100)
    assert ids == ["r8", "r10"]  # newest first within ~100 tokens, oldest-first in the block
    assert block.startswith(RULES_HEADER) and block.count("\n- ") == 2
    assert rules_block(rules, 0) == ("", [])


def test_a_run_task_text_carries_the_block_and_gives_back_the_users_words() -> None:
    block, _ = rules_block([_rule(1, "Use pathlib."), _rule(2, "Log at debug level.")], 600)
    text = with_rules("Write area(w, h).", block)
    assert own_task(text) == "Write area(w, h)."
    assert carried_rules(text) == ["Use pathlib.", "Log at debug level."]
    assert with_rules("Write area(w, h).", "") == "Write area(w, h)."
