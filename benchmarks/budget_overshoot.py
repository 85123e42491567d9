"""How far past its token and wall-clock budgets a scripted run ends.

Run: .venv/bin/python benchmarks/budget_overshoot.py [--tokens 2500] [--seconds 3] [--latency 0.4]

Scripted models whose every reply is wrong code, so a run keeps calling: the small profile
(plain answer, task samples, drafts, witnesses, repairs in one executor node) and the standard
profile (the tool loop). Tokens are counted from every reply's usage by a handler on the models
(not from the run's state), seconds by the clock around ``run_task``. Prints, per scenario, the
budget, what the run used, how far over it ended, and the model calls made.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import LLMResult  # noqa: E402

from atom_agent import Context, run_task  # noqa: E402
from atom_agent.testing import ScriptedChatModel, tool_call  # noqa: E402

TASK = (
    "Write add(a, b) that returns the sum and sub(a, b) that returns the difference, "
    "e.g. add(2, 3) == 5 and sub(5, 3) == 2. Include pytest tests."
)
WRONG = "```python\ndef add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n```\n"


class Counter(BaseCallbackHandler):
    """Every model call's tokens, as the replies report them."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.tokens = 0
        self.calls = 0

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                with self.lock:
                    self.calls += 1
                    self.tokens += int((usage or {}).get("total_tokens", 0))


def _small(latency: float) -> dict[str, ScriptedChatModel]:
    model = ScriptedChatModel(responses=[AIMessage(content=WRONG)], cycle=True,
                              model_name="qwen2.5-coder:1.5b", latency_s=latency)  # fmt: skip
    return {"planner": model, "executor": model}


def _standard(latency: float) -> dict[str, ScriptedChatModel]:
    def respond(messages: list[BaseMessage]) -> Any:
        if any("Plan" in str(m.content)[:400] for m in messages[:1]):
            return AIMessage(content=WRONG)
        return tool_call("read_file", {"path": "impl.py"})

    model = ScriptedChatModel(respond=respond, model_name="standard", latency_s=latency)
    return {"planner": model, "executor": model}


def scenario(name: str, models: dict[str, ScriptedChatModel], ctx: Context) -> str:
    counter = Counter()
    for model in {id(m): m for m in models.values()}.values():
        model.callbacks = [counter]
    started = time.monotonic()
    outcome = run_task(TASK, ctx, models=models)  # type: ignore[arg-type]
    seconds = time.monotonic() - started
    if ctx.max_tokens is not None:
        over = counter.tokens - ctx.max_tokens
        used = (
            f"{counter.tokens} of {ctx.max_tokens} tokens ({over:+d}, {over / ctx.max_tokens:+.0%})"
        )
    else:
        assert ctx.max_wall_seconds is not None
        over_s = seconds - ctx.max_wall_seconds
        used = (
            f"{seconds:.2f} s of {ctx.max_wall_seconds:.2f} s "
            f"({over_s:+.2f} s, {over_s / ctx.max_wall_seconds:+.0%})"
        )
    recorded = int(outcome.usage.get("total_tokens", 0))
    return (
        f"{name}: {outcome.status}, {used}, {counter.calls} model calls "
        f"(the run recorded {recorded} tokens)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=2500)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--latency", type=float, default=0.4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = {"max_attempts": 3, "max_tool_calls": 12, "sandbox_timeout_s": 30}
        runs = [
            ("small, tokens", _small(0.0), {"model_profile": "small", "max_tokens": args.tokens}),
            ("standard, tokens", _standard(0.0),
             {"model_profile": "standard", "max_tokens": args.tokens}),
            ("small, wall-clock", _small(args.latency),
             {"model_profile": "small", "max_wall_seconds": args.seconds}),
            ("standard, wall-clock", _standard(args.latency),
             {"model_profile": "standard", "max_wall_seconds": args.seconds}),
        ]  # fmt: skip
        for i, (name, models, settings) in enumerate(runs):
            ctx = Context(workspace=str(Path(tmp) / f"ws{i}"), **base, **settings)
            print(scenario(name, models, ctx), flush=True)


if __name__ == "__main__":
    main()
