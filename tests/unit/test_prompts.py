"""The prompt registry: replacements by name, braces kept, what a run sent."""

from __future__ import annotations

import pytest

from atom_agent import prompts
from atom_agent.errors import ConfigError
from atom_agent.prompts import Prompts, in_use, prompt_text, register

GREETING = "Hello {name}, {{literal}} braces stay."
NOTE = "A note without placeholders."


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two prompts of this test's own, registered for the test only (the registry is global)."""
    monkeypatch.setattr(prompts, "_DEFAULTS", dict(prompts._DEFAULTS))
    register("TEST_GREETING", GREETING)
    register("TEST_NOTE", NOTE)


def test_outside_a_run_the_built_in_text_is_sent() -> None:
    assert prompt_text("TEST_GREETING") is GREETING
    assert "TEST_GREETING" in prompts.names()


def test_a_replacement_keeps_its_own_braces_and_fills_the_built_ins_placeholders() -> None:
    run = Prompts({"TEST_GREETING": "Hi {name} {other} {not json} {}", "TEST_NOTE": "{x}"})
    with in_use(run):
        greeting = prompt_text("TEST_GREETING").format(name="Ada")
        note = prompt_text("TEST_NOTE")
    assert greeting == "Hi Ada {other} {not json} {}"
    assert note == "{x}"  # sent as is: its built-in is no template


def test_the_run_records_what_it_sent_and_names_replacements_it_never_sent() -> None:
    run = Prompts({"TEST_NOTE": "mine", "TEST_GREETING": "also mine", "EMPTY": "  "})
    assert run.replaced == {"TEST_NOTE": "mine", "TEST_GREETING": "also mine"}
    with in_use(run):
        prompt_text("TEST_NOTE")
    assert prompt_text("TEST_NOTE") == NOTE  # outside the block: built-in, not recorded
    assert run.sent() == ["TEST_NOTE"]
    assert (run.replaced_and_sent(), run.replaced_unsent()) == (["TEST_NOTE"], ["TEST_GREETING"])


def test_an_unknown_name_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="unknown prompt.*NO_SUCH"):
        Prompts({"NO_SUCH": "x"}).check()
    with pytest.raises(ConfigError, match="unknown prompt 'NO_SUCH'"):
        prompt_text("NO_SUCH")


def test_one_name_cannot_hold_two_built_in_texts() -> None:
    assert register("TEST_NOTE", NOTE) == NOTE  # a module imported twice registers the same
    with pytest.raises(ConfigError, match="registered twice"):
        register("TEST_NOTE", "another text")
