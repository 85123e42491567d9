"""Prompt-lookup decoding on the embedded model: decode speed with and without, by kind of call.

Run (idle machine; ~10 min): .venv/bin/python benchmarks/prompt_lookup.py [--calls 2]
[--workspace DIR]

The agent's own model (``LocalChatModel(prompt_lookup=10)``) and its own switch: a call made
inside :func:`atom_agent.models.lookup.copying` drafts tokens from its prompt's n-grams
(llama.cpp's ``LlamaPromptLookupDecoding``) on the same instance; the same request outside it
decodes token by token. Greedy, alternating, the same weights in memory. Kinds of call:

- retry: the plain prompt of a task, the model's answer, and "one check failed: write the
  whole module again" (the new-code path's whole-file retry, marked copying);
- project repair: a run on a project's repair request (its previous version shown with why
  it was rejected), read from ``--workspace DIR`` (a workspace with project runs; marked
  copying);
- project edit: the first edit request of such a run (the target's code around it, not
  marked);
- fresh: the plain prompt alone (not marked).

Prints decode tokens/s (prefill excluded: ``response_metadata["decode_s"]``) per call and the
median ratio per kind, and whether the two replies are the same (verified batches change the
numerics slightly, as batch splits do, so a greedy reply can differ).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage  # noqa: E402

from atom_agent.models.local import LocalChatModel  # noqa: E402
from atom_agent.models.lookup import copying  # noqa: E402
from atom_agent.selection.candidates import PLAIN_TASK  # noqa: E402

TASKS = [
    "Write word_counts(text: str) -> dict[str, int] that counts each lower-cased word "
    "(letters only). Include pytest tests.",
    "Write a Stack class with push(x), pop() (IndexError when empty), peek() and __len__.",
    "Write chunk(items: list, size: int) -> list[list] that splits items into lists of at "
    "most size items; size < 1 raises ValueError.",
    "Write roman(n: int) -> str that converts 1..3999 to a Roman numeral; other n raise "
    "ValueError.",
]
RETRY_NOTE = (
    "Your code was run against the task's checks: 1 of them failed (the first example gave "
    "a different result). Write the whole module again, fixed, in one ```python block."
)
LOOKUP_TOKENS = 10


def project_requests(workspace: Path, limit: int) -> dict[str, list[list[BaseMessage]]]:
    """Repair and first-edit requests of the project runs in `workspace` (at most `limit` each)."""
    found: dict[str, list[list[BaseMessage]]] = {"project repair": [], "project edit": []}
    for history in sorted(workspace.glob("runs/*/steps/*/attempts/*/messages/history.json")):
        messages = json.loads(history.read_text(encoding="utf-8")).get("messages") or []
        system = [m for m in messages if m.get("type") == "system"][:1]
        if not system or "existing project" not in str(system[0].get("content")):
            continue
        for m in messages:
            if m.get("type") != "human":
                continue
            text = str(m.get("content"))
            kind = "project repair" if "Your previous version:" in text else "project edit"
            if "An earlier version was not accepted" in text or len(found[kind]) >= limit:
                continue
            found[kind].append([SystemMessage(str(system[0]["content"])), HumanMessage(text)])
            break
    return found


def _ask(model: LocalChatModel, messages: list[BaseMessage], lookup: bool) -> tuple[str, float]:
    if lookup:
        with copying():
            reply = model.invoke(messages, temperature=0.0)
    else:
        reply = model.invoke(messages, temperature=0.0)
    meta: dict[str, Any] = reply.response_metadata or {}
    usage = reply.usage_metadata or {}
    decode = float(meta.get("decode_s") or meta.get("duration_s") or 1.0)
    return str(reply.content), int(usage.get("output_tokens", 0)) / max(decode, 1e-6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2, help="calls per kind")
    parser.add_argument("--workspace", type=Path, help="a workspace with project runs")
    parser.add_argument("--max-tokens", type=int, default=600)
    args = parser.parse_args()
    model = LocalChatModel(prompt_lookup=LOOKUP_TOKENS, max_tokens=args.max_tokens,
                           stop_early=True)  # fmt: skip
    kinds: dict[str, list[list[BaseMessage]]] = {"retry": [], "fresh": []}
    for task in TASKS[: args.calls]:
        fresh: list[BaseMessage] = [HumanMessage(PLAIN_TASK.format(task=task))]
        answer = model.invoke(fresh, temperature=0.0)
        kinds["fresh"].append(fresh)
        kinds["retry"].append([*fresh, AIMessage(str(answer.content)), HumanMessage(RETRY_NOTE)])
    if args.workspace is not None:
        kinds.update(project_requests(args.workspace, args.calls))
    ratios: dict[str, list[float]] = {}
    for kind, requests in kinds.items():
        for messages in requests:
            text_a, speed_a = _ask(model, messages, lookup=False)
            text_b, speed_b = _ask(model, messages, lookup=True)
            same = "same reply" if text_a == text_b else "replies differ"
            ratios.setdefault(kind, []).append(speed_b / speed_a)
            print(
                f"{kind:14} decode: {speed_a:5.1f} tok/s without, {speed_b:5.1f} with prompt "
                f"lookup ({speed_b / speed_a:.2f}x), {same}",
                flush=True,
            )
    for kind, values in ratios.items():
        print(f"{kind}: median {statistics.median(values):.2f}x over {len(values)} calls "
              "(decode tokens/s with prompt lookup / without, same instance)")  # fmt: skip


if __name__ == "__main__":
    main()
