"""An independent test of the demo task, run against what the demo committed.

The demo asks for is_palindrome(s) that ignores case and non-alphanumeric characters. These
cases are ours, not the model's: `make demo` passes only when the committed code meets them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

CASES = [
    ("A man, a plan, a canal: Panama", True),
    ("A man a plan a canal Panama", True),
    ("No 'x' in Nixon", True),
    ("Was it a car or a cat I saw?", True),
    ("12321", True),
    ("", True),
    ("race a car", False),
    ("hello", False),
    ("ab", False),
    ("0P", False),
]


def main(workspace: str) -> int:
    runs = sorted((Path(workspace) / "runs").glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    if not runs:
        print(f"demo check: no run in {workspace}")
        return 1
    run = runs[-1].parent
    info = json.loads((run / "run.json").read_text())
    impls = sorted(run.glob("steps/*/committed/artifacts/impl.py"))
    print(
        f"demo check: run {run.name}, status {info.get('status')}, "
        f"{len(list(run.glob('steps/*/step.json')))} step(s), {len(impls)} committed"
    )
    if not impls:
        print("demo check: FAILED (nothing committed)")
        return 1
    spec = importlib.util.spec_from_file_location("demo_impl", impls[-1])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    wrong = []
    for text, want in CASES:
        try:
            got = module.is_palindrome(text)
        except Exception as exc:  # noqa: BLE001 - any failure of the code is a wrong answer
            got = f"{type(exc).__name__}: {exc}"
        if got != want:
            wrong.append(f"is_palindrome({text!r}) gave {got!r}, expected {want!r}")
    print(
        f"demo check: {len(CASES) - len(wrong)}/{len(CASES)} independent cases pass ({impls[-1]})"
    )
    for line in wrong:
        print(f"  {line}")
    result = info.get("deliverable") or {}
    if result:
        tests = result.get("tests") or {}
        print(
            f"demo result: {result['path']} — package {result['package']}, its tests "
            f"{tests.get('passed', 0)} passed / {tests.get('failed', 0)} failed; take it with "
            f"`atom-agent runs export {run.name} DIR --workspace {workspace}`"
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "demo_workspace"))
