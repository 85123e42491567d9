"""Ending a local model's reply early: a complete code block, or a reply that loops."""

from __future__ import annotations

from atom_agent.models.stopping import (
    ReplyWatch,
    block_complete,
    code_replies,
    expecting_now,
    looping,
    names_now,
)

CODE = "```python\ndef f(x):\n    return x * 2\n```"


def test_a_closed_block_with_a_definition_is_complete() -> None:
    assert block_complete(CODE)
    assert block_complete("Here it is:\n\n" + CODE + "\n")


def test_an_open_block_is_not_complete() -> None:
    assert not block_complete("```python\ndef f(x):\n    return x * 2\n")


def test_a_block_of_only_an_import_or_a_shell_command_does_not_count() -> None:
    assert not block_complete("```python\nimport math\n```\n")
    assert not block_complete("```bash\npip install pytest\n```\n")
    assert block_complete("```bash\npip install pytest\n```\n\n" + CODE)


def test_a_block_that_does_not_parse_does_not_count() -> None:
    assert not block_complete("```python\ndef f(x:\n    return\n```")


def test_asserts_and_with_statements_count_for_a_contract() -> None:
    assert block_complete("```python\nassert f(2) == 4\n```", "tests")
    assert block_complete("```python\nwith pytest.raises(ValueError):\n    f(-1)\n```", "tests")


def test_a_block_of_code_alone_does_not_complete_a_request_for_tests() -> None:
    assert block_complete(CODE, "code")
    assert not block_complete(CODE, "tests")
    assert block_complete(CODE + "\n```python\nassert f(2) == 4\n```", "tests")


def test_outside_code_replies_only_a_loop_ends_a_reply() -> None:
    assert expecting_now() == ""
    watch = ReplyWatch(expecting=expecting_now())
    assert not watch.done(CODE + "\n\nThis doubles x.\n")
    with code_replies("tests"):
        assert expecting_now() == "tests"
    with code_replies():
        assert ReplyWatch(expecting=expecting_now()).done(CODE + "\n")
    assert expecting_now() == ""


def test_a_group_of_lines_written_three_times_is_a_loop() -> None:
    group = "def test_a():\n    assert f('abc') == 'cba'\n    assert f('') == ''\n"
    assert not looping("import pytest\n" + group * 2)
    assert looping("import pytest\n" + group * 3)


def test_short_repeated_lines_are_no_loop() -> None:
    assert not looping("x\n)\n]\n" * 5)


def test_different_cases_are_no_loop() -> None:
    text = "".join(f"def test_{i}():\n    assert f({i}) == {2 * i}\n\n" for i in range(12))
    assert not looping(text)


def test_the_watch_ends_at_the_closing_fence_and_says_why() -> None:
    watch = ReplyWatch(expecting="code")
    text = ""
    ended_at = None
    for piece in ["```py", "thon\n", "def f(x):\n", "    return x * 2\n", "``", "`", "\nThis"]:
        text += piece
        if watch.done(text):
            ended_at = text
            break
    assert ended_at is not None and ended_at.endswith("```")
    assert watch.reason == "code block complete"
    assert watch.done(ended_at + " more")  # stays done


def test_the_watch_ends_a_loop_inside_an_open_block() -> None:
    watch = ReplyWatch()
    text = "```python\n"
    line = "assert is_palindrome('A man, a plan') is True\n"
    rounds = 0
    while not watch.done(text) and rounds < 10:
        text += line + "assert is_palindrome('x') is True\n" + "assert is_palindrome('') is True\n"
        rounds += 1
    assert watch.reason == "reply repeats itself"
    assert rounds == 3


def test_lines_that_each_grow_by_a_few_characters_are_a_loop() -> None:
    rows = "".join(f'    ("{"Aa" * i}", True),\n' for i in range(1, 9))
    assert looping('@pytest.mark.parametrize("s, expected", [\n' + rows)


def test_lines_of_one_shape_that_count_up_are_a_loop() -> None:
    # Numbers aside, one line, longer each time: a test case counted up to the token limit.
    rows = "".join(f"    assert total([{', '.join(['1'] * i)}]) == {i}\n" for i in range(1, 9))
    assert looping(rows)
    lows = "".join(
        f"assert below([{', '.join(str(k) for k in range(1, i))}, -{i}]) == True\n"
        for i in range(2, 10)
    )
    assert looping("def test_below():\n" + lows)
    assert not looping("def test_below():\n" + "".join(lows.splitlines(True)[:7]))


def test_same_shaped_lines_that_do_not_grow_are_no_loop() -> None:
    rows = "".join(f"    assert double({i}) == {2 * i}\n" for i in range(1, 10))
    assert not looping(rows)


def test_growing_lines_that_change_elsewhere_are_no_loop() -> None:
    cases = "".join(
        f'    ("{w}", {len(w) % 2 == 0}),\n' for w in ["a", "ab", "abc", "abcd", "ab", "a"]
    )
    assert not looping(cases)


def test_drafts_and_contracts_ask_for_code_only_and_the_plain_call_does_not() -> None:
    from langchain_core.messages import AIMessage, BaseMessage

    from atom_agent.models.sampling import sample
    from atom_agent.nodes.planner import finalize_plan, single_step_plan
    from atom_agent.selection.candidates import ask_plain
    from atom_agent.testing import ScriptedChatModel
    from atom_agent.verification.contracts import write_contracts

    seen: list[tuple[str, tuple[str, ...]]] = []

    def respond(messages: list[BaseMessage]) -> AIMessage:
        seen.append((expecting_now(), names_now()))
        return AIMessage(content="```python\nassert f(1) == 1\n```")

    model = ScriptedChatModel(respond=respond)
    task = "Write f(x) that returns x."
    ask_plain(model, task, ["f"])  # the single-shot baseline: never cut
    ask_plain(model, task, ["f"], end_at_tests=True)  # the agent's candidate zero
    sample(model, [], 0.0, purpose="draft", code_only="code", names=["f"])
    write_contracts(model, task, finalize_plan(single_step_plan(task), task))
    assert seen == [("", ()), ("module", ("f",)), ("code", ("f",)), ("tests", ())]


# A reply as the embedded model writes it when the task asks for tests too: the
# implementation, then its tests in the same block (shortened from a real one).
MODULE_REPLY = """```python
import re


def slugify(text: str, max_length: int = 50) -> str:
    if max_length < 1:
        raise ValueError("max_length must be at least 1")
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return text[:max_length].rstrip("-")


# pytest tests
import pytest


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"
    with pytest.raises(ValueError):
        slugify("x", 0)
```
"""


def _watched(text: str, watch: ReplyWatch) -> str:
    """Feed `text` to `watch` a few characters at a time, as tokens arrive; the reply it keeps."""
    for end in range(4, len(text) + 4, 4):
        if watch.done(text[:end]):
            return watch.reply(text[:end])
    return text


def test_a_module_reply_ends_where_its_tests_begin_with_the_same_code() -> None:
    from atom_agent.replies import extract_code

    watch = ReplyWatch(expecting="module", names=("slugify",))
    kept = _watched(MODULE_REPLY, watch)
    assert watch.reason == "implementation complete, tests follow"
    assert "import pytest" not in kept and "def test_" not in kept
    assert kept.rstrip().endswith("```")  # the block is closed where it was cut
    assert extract_code(kept) == extract_code(MODULE_REPLY)
    assert "def slugify" in extract_code(kept)


def test_a_module_reply_is_not_cut_before_every_name_is_defined() -> None:
    watch = ReplyWatch(expecting="module", names=("slugify", "unslug"))
    assert _watched(MODULE_REPLY, watch) == MODULE_REPLY and watch.reason == ""
    # Nor without names (nothing says what the code must define), nor outside code replies.
    for unnamed in (ReplyWatch(expecting="module"), ReplyWatch(expecting="", names=("slugify",))):
        assert _watched(MODULE_REPLY, unnamed) == MODULE_REPLY


def test_code_that_reads_a_helper_written_after_the_tests_is_not_cut() -> None:
    later = MODULE_REPLY.replace(
        'text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")', "text = _fold(text)"
    ).replace("```\n", "\n\ndef _fold(text):\n    return text.lower()\n```\n")
    watch = ReplyWatch(expecting="module", names=("slugify",))
    assert _watched(later, watch) == later and watch.reason == ""


def test_a_module_reply_is_not_ended_at_its_first_closing_fence() -> None:
    # Asked for a whole module, a small model may write a fuller one in a second block.
    first = "```python\ndef f(x):\n    return x\n```\nA fuller one:\n```python\ndef f(x):\n"
    watch = ReplyWatch(expecting="module", names=("f",))
    assert not watch.done(first)
    assert ReplyWatch(expecting="code", names=("f",)).done(first)


def test_a_draft_that_writes_tests_after_its_code_ends_there_too() -> None:
    watch = ReplyWatch(expecting="code", names=("slugify",))
    _watched(MODULE_REPLY, watch)
    assert watch.reason == "implementation complete, tests follow"


def test_one_short_piece_written_over_and_over_on_one_line_is_a_loop() -> None:
    line = "    assert sort_versions(['1.10', '1.2-beta', '1.9', '1.2', '1.10', " + (
        "'1.2-beta', '1.2', '1.9', '1.2', '1.10', " * 6
    )
    assert looping(line)
    assert not looping(line[:150])
    watch = ReplyWatch()  # and the watch looks although no new line arrives
    assert _watched(line + "'1.2-beta', " * 40, watch) != line + "'1.2-beta', " * 40
    assert watch.reason == "reply repeats itself"
    # A long line that does not repeat a short piece is no loop.
    assert not looping("x = [" + ", ".join(str(i * i) for i in range(80)))


def test_a_passage_written_three_times_on_a_line_that_never_ends_is_a_loop() -> None:
    # A judgement's JSON string through llama-server, recorded: three sentences, over and over.
    passage = (
        "The function is well-documented, with a docstring that clearly describes its purpose. "
        "The function is well-tested, with test cases that cover the scenarios. "
        "The function is well-structured and easy to maintain. "
    )
    head = '{\n  "criteria": [],\n  "feedback": "'
    assert not looping(head + passage * 2)  # said twice: may still be prose
    assert looping(head + passage * 3)
    assert looping(head + passage * 3 + passage[:40])  # wherever the copy has reached
    # Long prose that never repeats a passage is no loop.
    prose = " ".join(f"Sentence {i} says something new about case {i * 7}." for i in range(60))
    assert not looping(head + prose)


def test_lines_of_one_shape_that_step_by_a_fixed_amount_are_a_loop() -> None:
    rows = "".join(
        f"    assert allocate(100, [1, 2, 3], {i}) == [17, 12, 11]\n" for i in range(8, 20)
    )
    assert looping(rows)
    assert not looping("".join(rows.splitlines(True)[:11]))
    table = "".join(f"    assert double({i}) == {2 * i}\n" for i in range(1, 10))
    assert not looping(table)  # nine cases of a table are not a loop


def test_a_group_of_lines_written_again_and_again_growing_is_a_loop() -> None:
    case = '    with pytest.raises(ValueError):\n        rle_decode("3a3b{tail}")\n'
    letters = "cdefghijklmnop"
    groups = "".join(case.format(tail=letters[:i]) for i in range(1, 7))
    assert looping("def test_bad():\n" + groups)
    assert not looping("def test_bad():\n" + "".join(groups.splitlines(True)[:8]))
    # The argument and the expected result grown together, line after line.
    grown = "".join(
        f'    assert slugify("Hello-World{"-1" * i}") == "hello-world{"-1" * i}"\n'
        for i in range(9)
    )
    assert looping(grown)
    # Different cases in a group of the same shape are no loop.
    cases = "".join(
        f'    with pytest.raises(ValueError):\n        rle_decode("{bad}")\n'
        for bad in ["a3", "3", "", "3a-", "a", "33", "-1a"]
    )
    assert not looping(cases)
