"""What a task asks to define: a parameter it writes in backticks is no function to write."""

from __future__ import annotations

from atom_agent.names import named_in_text, parameters_in_text
from atom_agent.nodes.executor.node import _candidate_zero
from atom_agent.nodes.planner import single_step_plan, single_unit, task_names

# Tasks of our own wording: a signature, then its parameters named in backticks in the prose.
PAD = (
    "Write `pad_left(text: str, size: int, fill: str = ' ') -> str` that pads `text` on the "
    "left with `fill` until it is `size` characters long. A `fill` that is not one character "
    "raises ValueError. Example: pad_left('7', 3, '0') returns '007'."
)
PLAIN = "def pad_left(text, size, fill=' '):\n    return text.rjust(size, fill)\n"


def test_a_backticked_parameter_of_a_stated_signature_is_not_a_name_to_define() -> None:
    assert parameters_in_text(PAD) == {"text", "size", "fill"}
    assert named_in_text(PAD) == ["pad_left"]
    assert task_names(PAD) == ["pad_left"]
    assert single_unit(PAD)


def test_the_plain_answer_is_candidate_zero_of_such_a_task() -> None:
    # Before, the step also "defined" text, size and fill: no plain answer could define
    # them, so candidate zero was dropped and the first attempt paid for a fresh draft.
    step = single_step_plan(PAD).steps[0]
    assert step.defines == ["pad_left"]
    assert _candidate_zero(PLAIN, step.defines) == PLAIN


def test_a_name_called_or_defined_stays_even_when_it_is_also_a_parameter() -> None:
    task = "Write `apply(key, items)` and `key(item)`, where `key` returns a sort key."
    assert named_in_text(task) == ["apply", "key"]
    # An example call with literal arguments states no parameter.
    assert parameters_in_text("Example: pad_left('7', 3, '0') returns '007'.") == set()
    # A backticked name that no signature lists is still a name the task asks for.
    assert named_in_text("Add `Stack` and `pad_left(text: str)`.") == ["Stack", "pad_left"]
