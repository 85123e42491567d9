"""One plain call of the model per development task, laid out so the devtasks oracle scores it.

The baseline beside `atom-agent batch ../shared/devtasks/tasks.jsonl`: the same model asked once
for the module ("reply with one python block"), no plan, checks or retries. Its code goes where a
run's committed code goes (`runs/<prefix>.<id>/steps/step1/committed/artifacts/impl.py`), so

    python benchmarks/devtasks_single_shot.py ../shared/devtasks/tasks.jsonl --workspace dev_single
    python ../shared/devtasks/oracle.py dev_single single

scores it exactly like the agent's runs. Prints tokens and seconds per task.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from langchain_core.messages import HumanMessage  # noqa: E402

from atom_agent.models import load_chat_model  # noqa: E402
from atom_agent.nodes.drafting import extract_code  # noqa: E402

PROMPT = (
    "{task}\n\nWrite the complete Python module for this. Reply with the whole module in one "
    "```python block, nothing else."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--workspace", type=Path, default=Path("dev_single"))
    parser.add_argument("--prefix", default="single")
    parser.add_argument("--model", default="local")
    args = parser.parse_args()
    model = load_chat_model(args.model)
    rows = []
    for line in args.tasks.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        t0 = time.monotonic()
        reply = model.invoke([HumanMessage(PROMPT.format(task=item["task"]))])
        seconds = time.monotonic() - t0
        usage = reply.usage_metadata or {"total_tokens": 0}
        artifacts = (
            args.workspace / "runs" / f"{args.prefix}.{item['id']}" / "steps" / "step1"
            / "committed" / "artifacts"
        )  # fmt: skip
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "impl.py").write_text(extract_code(reply.text), encoding="utf-8")
        rows.append((item["id"], int(usage.get("total_tokens", 0)), seconds))
        print(f"{item['id']}: {rows[-1][1]} tokens, {seconds:.1f} s", flush=True)
    n = len(rows) or 1
    print(f"single-shot: {sum(r[1] for r in rows) / n:.0f} tokens and "
          f"{sum(r[2] for r in rows) / n:.1f} s per task")  # fmt: skip


if __name__ == "__main__":
    main()
