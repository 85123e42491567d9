"""Usage sums: tokens and calls, and the prompt tokens the embedded model really computed."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from atom_agent.usage import usage_of


def _reply(inp: int, out: int, **meta: int) -> AIMessage:
    message = AIMessage(content="x", response_metadata=dict(meta))
    message.usage_metadata = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    return message


def test_prefill_figures_are_summed_when_the_model_reports_them() -> None:
    usage = usage_of(
        [
            HumanMessage("q"),
            _reply(100, 10, prefill_computed=100, prefill_without_prefix_cache=100),
            _reply(120, 20, prefill_computed=15, prefill_without_prefix_cache=90),
        ]
    )
    assert usage["input_tokens"] == 220 and usage["model_calls"] == 2
    assert usage["prefill_computed"] == 115
    assert usage["prefill_without_prefix_cache"] == 190


def test_providers_that_report_no_prefill_get_no_prefill_keys() -> None:
    usage = usage_of([_reply(10, 5), _reply(7, 3)])
    assert usage["total_tokens"] == 25
    assert "prefill_computed" not in usage and "prefill_without_prefix_cache" not in usage
