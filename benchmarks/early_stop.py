"""How much of the local model's replies the early stop saves, and whether any code changes.

Offline, no model call: every reply recorded in replay caches (``--cache`` of an eval) is fed
to :class:`~atom_agent.models.stopping.ReplyWatch` a few characters at a time, as tokens
arrive, in two ways:

- **loops** (every call): where the watch ends a reply that repeats itself;
- **tests after the code** (the agent's calls for a module or for code): where it ends a reply
  whose block goes on with tests after code defining the names the reply defines.

It prints, per cache and way, the replies ended early, the output tokens after that point
(their share of the reply's characters, an estimate) and how many replies read to different
code: the implementation (tests left out) for both ways, and for loops the tests too (a
contract reads those), apart for replies that ran to the token limit (a loop's tail, cut
somewhere anyway) and replies that ended by themselves. The baseline is the same replies
read whole, so the ratio is the share of recorded output tokens the stop would not have
decoded:

    python benchmarks/early_stop.py CACHE [CACHE ...] [--show N]
"""

from __future__ import annotations

import argparse
import ast
import json
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from atom_agent.models.stopping import Expecting, ReplyWatch  # noqa: E402
from atom_agent.names import defined_in_code  # noqa: E402
from atom_agent.replies import extract_code  # noqa: E402

STEP_CHARS = 4
"""Characters fed to the watch at a time (about one token of code)."""


@dataclass
class Tally:
    """One way of stopping over one cache."""

    ended: int = 0
    saved_tokens: float = 0.0
    changed: list[str] = field(default_factory=list)
    """Excerpts of replies that ended by themselves and would read to different code."""
    cut_loops: int = 0
    """Replies that ran to the token limit and read to different code (the loop's tail)."""


def watched(text: str, expecting: Expecting, names: tuple[str, ...]) -> tuple[str, str]:
    """The reply as the watch would have left it, and why it ended ('' if it ran to the end)."""
    watch = ReplyWatch(expecting=expecting, names=names)
    for end in range(STEP_CHARS, len(text) + STEP_CHARS, STEP_CHARS):
        if watch.done(text[:end]):
            return watch.reply(text[:end]), watch.reason
    return text, ""


def same_code(a: str, b: str) -> bool:
    """Equal as Python (comments and layout aside), or equal as text when either does not parse."""
    try:
        return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError):
        return a.strip() == b.strip()


def replies(cache: Path) -> list[tuple[str, int, bool]]:
    """Each recorded reply's text, output tokens, and whether it ran to the token limit."""
    db = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT value FROM replies ORDER BY key").fetchall()
    finally:
        db.close()
    out = []
    for (value,) in rows:
        for part in value.split("\x1e"):
            kwargs = json.loads(part).get("kwargs", {})
            content = kwargs.get("content")
            if isinstance(content, str):
                usage = kwargs.get("usage_metadata") or {}
                limit = (kwargs.get("response_metadata") or {}).get("finish_reason") == "length"
                out.append((content, int(usage.get("output_tokens") or 0), limit))
    return out


def measure(cache: Path) -> tuple[int, int, dict[str, Tally]]:
    """Replies, their output tokens, and the tally of each way of stopping."""
    tallies = {"loops": Tally(), "tests after the code": Tally()}
    recorded = replies(cache)
    for text, tokens, at_limit in recorded:
        code, tests = extract_code(text), extract_code(text, tests=True)
        names = tuple(n for n in defined_in_code(code) if not n.startswith("test"))
        for way, expecting, wanted in (
            ("loops", "", ()),
            ("tests after the code", "module", names),
        ):
            kept, why = watched(text, expecting, wanted)
            if not why or (way != "loops" and why == "reply repeats itself"):
                continue
            tally = tallies[way]
            tally.ended += 1
            tally.saved_tokens += tokens * (1 - len(kept) / max(1, len(text)))
            differs = not same_code(extract_code(kept), code)
            if way == "loops":
                differs = differs or not same_code(extract_code(kept, tests=True), tests)
            if differs and at_limit:
                tally.cut_loops += 1
            elif differs:
                tally.changed.append(text[max(0, len(kept) - 240) : len(kept) + 120])
    return len(recorded), sum(t for _, t, _ in recorded), tallies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("caches", nargs="+", type=Path)
    parser.add_argument("--show", type=int, default=0, help="print N changed replies per way")
    args = parser.parse_args(argv)
    for cache in args.caches:
        if not cache.is_file():
            print(f"{cache}: no such file", file=sys.stderr)
            return 2
        n, tokens, tallies = measure(cache)
        print(f"{cache}: {n} replies, {tokens} output tokens")
        for way, tally in tallies.items():
            share = tally.saved_tokens / tokens if tokens else 0.0
            print(
                f"  {way}: {tally.ended} ended early, ~{tally.saved_tokens:.0f} tokens not "
                f"decoded ({share:.1%}); read to different code: {len(tally.changed)} of the "
                f"replies that ended by themselves, {tally.cut_loops} that ran to the token limit"
            )
            for excerpt in tally.changed[: args.show]:
                print("    " + repr(excerpt))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
