from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from atom_agent.models.structured import invoke_structured, with_schema_computed_once
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


class _Metadata(BaseCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.seen.append(dict(kwargs.get("options") or {}))


def test_the_schema_is_computed_once_with_the_same_answer_and_tracing_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = Verdict(passed=False, reasons=["add(2, 3) gave -1"])
    model = ScriptedChatModel(responses=[answer], cycle=True)
    plain = model.with_structured_output(Verdict)
    once = with_schema_computed_once(plain)
    assert once is not plain
    generated: list[str] = []
    original = Verdict.model_json_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: type[BaseModel], *args: Any, **kwargs: Any) -> Any:
        generated.append(cls.__name__)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Verdict, "model_json_schema", classmethod(counting))
    seen = _Metadata()
    for runnable in (plain, once, once):
        assert runnable.invoke("judge", config={"callbacks": [seen]}) == answer
    assert generated == ["Verdict"]  # the plain runnable's call only
    traced = [m["ls_structured_output_format"] for m in seen.seen]
    assert traced[0] == traced[1] == traced[2] and traced[0]["schema"]["title"] == "Verdict"


def test_a_runnable_of_another_shape_is_left_as_it_is() -> None:
    model = ScriptedChatModel(responses=["x"])
    assert with_schema_computed_once(model) is model
