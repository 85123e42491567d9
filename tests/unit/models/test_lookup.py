"""Which calls copy their prompt: marked by the call site, keyed apart in a replay cache."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage

from atom_agent.checks.contract import ContractReport
from atom_agent.models.local import LocalChatModel
from atom_agent.models.lookup import copying, copying_now
from atom_agent.sandbox import Limits, default_runner
from atom_agent.selection.drafts import write_drafts
from atom_agent.state import Check
from atom_agent.testing import ScriptedChatModel


def test_the_local_model_keys_a_copying_call_apart_only_when_its_lookup_is_on() -> None:
    on, off = LocalChatModel(prompt_lookup=10), LocalChatModel()
    # A call without lookup keeps the key it had before the option: old replay caches answer.
    assert on._identifying_params == off._identifying_params
    assert "prompt_lookup" not in on._identifying_params
    with copying():
        assert copying_now()
        # A replay cache keys the call by what changes its reply: the lookup it decodes with.
        assert on._identifying_params["prompt_lookup"] == 10
        assert "prompt_lookup" not in off._identifying_params
    assert not copying_now()


def test_no_call_of_an_attempts_drafts_is_a_copying_call(tmp_path: Path) -> None:
    marks: list[tuple[str, bool]] = []
    wrong = "def inc(x):\n    return x + 2\n"

    def respond(messages: list[BaseMessage]) -> AIMessage:
        kind = "retry" if len(messages) > 1 else "draft"
        marks.append((kind, copying_now()))
        return AIMessage(content=f"```python\n{wrong}```")

    model = ScriptedChatModel(respond=respond, model_name="qwen2.5-coder:1.5b")
    # The draft and its witness write fresh code: neither decodes with prompt lookup.
    checks = [Check(call="2 + 2", expect="5", origin="task")]
    drafts = write_drafts(
        model=model, prompt="Write inc(x).", temperature=0.0, checks=checks,
        task="Write inc(x).", defines=["inc"], available=[], folder=tmp_path, python_path=[],
        runner=default_runner(), limits=Limits(timeout_s=30.0), witnesses=1,
    )  # fmt: skip
    assert isinstance(drafts.candidates[0].report, ContractReport)
    assert marks == [("draft", False), ("draft", False)]
