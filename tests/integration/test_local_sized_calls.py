"""The embedded model's contract and plan replies end where their structure does, not on a cap."""

from __future__ import annotations

import pytest

from atom_agent.models import LocalChatModel, load_chat_model
from atom_agent.models.ledger import CallLedger, recording
from atom_agent.nodes.planner import finalize_plan, single_step_plan
from atom_agent.verification.contracts import (
    ask_contract,
    contract_max_tokens,
    contract_size,
)

pytestmark = [pytest.mark.local_model, pytest.mark.integration]

TASK = (
    "Write a Stack class. Stack() starts empty. push(x) puts x on top. pop() removes and returns "
    "the top item; popping an empty stack raises IndexError. size() returns how many items it "
    "holds."
)


@pytest.fixture(scope="module")
def model() -> LocalChatModel:
    chat = load_chat_model("local")
    assert isinstance(chat, LocalChatModel)
    return chat


def test_a_grammar_constrained_contract_reply_ends_before_its_cap(model: LocalChatModel) -> None:
    plan = finalize_plan(single_step_plan(TASK), TASK)
    (step,) = plan.steps
    most = contract_size(plan, step)
    ledger = CallLedger()
    with recording(ledger):
        reply, checks = ask_contract(model, TASK, plan, step)
    assert reply is not None and reply.tool_calls, reply
    assert reply.response_metadata["finish_reason"] == "stop"
    usage = reply.usage_metadata
    assert usage is not None and usage["output_tokens"] < contract_max_tokens(most)
    assert 1 <= len(reply.tool_calls[0]["args"]["tests"]) <= most
    assert checks, reply.tool_calls[0]["args"]
    assert ledger.rows["contract"]["calls"] == 1 and ledger.rows["contract"]["capped"] == 0
