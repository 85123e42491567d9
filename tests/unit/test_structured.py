from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from atom_agent.models.structured import invoke_structured
from atom_agent.testing import ScriptedChatModel, ScriptExhaustedError, tool_call


class Verdict(BaseModel):
    passed: bool
    reasons: list[str]


def test_a_parsed_answer_comes_with_the_raw_reply_and_its_usage() -> None:
    model = ScriptedChatModel(responses=[Verdict(passed=True, reasons=["ok"])])
    reply = invoke_structured(model.with_structured_output(Verdict), "judge")

    assert reply.parsed == Verdict(passed=True, reasons=["ok"])
    assert reply.error == ""
    assert isinstance(reply.raw, AIMessage)
    assert reply.raw.tool_calls[0]["name"] == "Verdict"
    assert reply.raw.usage_metadata and reply.raw.usage_metadata["output_tokens"] > 0


def test_a_prose_reply_is_unparsed_with_the_raw_reply_kept() -> None:
    model = ScriptedChatModel(responses=["I think it passed."])
    reply = invoke_structured(model.with_structured_output(Verdict), "judge")

    assert reply.parsed is None
    assert reply.error
    assert reply.raw is not None and reply.raw.content == "I think it passed."


def test_a_reply_with_wrong_arguments_is_a_parsing_error_naming_the_field() -> None:
    model = ScriptedChatModel(responses=[tool_call("Verdict", {"passed": "maybe"})])
    reply = invoke_structured(model.with_structured_output(Verdict), "judge")

    assert reply.parsed is None
    assert "reasons" in reply.error or "passed" in reply.error
    assert reply.raw is not None


def test_a_failed_model_call_raises_instead_of_passing_for_a_parse_error() -> None:
    model = ScriptedChatModel(responses=[])
    with pytest.raises(ScriptExhaustedError):
        invoke_structured(model.with_structured_output(Verdict), "judge")
