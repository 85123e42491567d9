"""Live progress of a run on the terminal (rich), from the graph's stream."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from atom_agent.state import Check

_VERDICT = {"passed": "[green]passed[/green]", "failed": "[red]failed[/red]"}


class Progress:
    """Prints the plan, each step/attempt, tool calls and verdicts as they happen.

    On a terminal, a model reply being decoded shows as one line that grows in place (its
    pieces so far and its latest text), gone when the reply is over or anything is printed.
    """

    def __init__(self, console: Console, *, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self._growing: dict[str, tuple[int, str]] = {}  # model call -> (pieces, text so far)
        self._shown = False

    def __call__(self, mode: str, chunk: Any) -> None:
        """An `EventHandler` for run_task / resume_run."""
        if mode == "token" and isinstance(chunk, dict):
            self._token(chunk)
            return
        self._clear()
        if mode == "updates" and isinstance(chunk, dict):
            for node, update in chunk.items():
                if node == "planner" and isinstance(update, dict) and update.get("plan"):
                    self._plan(update["plan"], update.get("plan_revision", 1))
            return
        if mode != "custom" or not isinstance(chunk, dict):
            return
        event = chunk.get("event", "")
        c = self.console
        if event == "run.start":
            c.print(f"[bold]run[/bold] {chunk.get('run_id')}: {escape(str(chunk.get('task')))}")
        elif event == "plan.invalid":
            c.print(f"  [yellow]plan rejected[/yellow]: {escape('; '.join(chunk['problems']))}")
        elif event == "executor.attempt":
            c.print(
                f"[bold cyan]step {chunk['step_id']}[/bold cyan] attempt {chunk['attempt']} "
                f"(prompt ≈{chunk['prompt_tokens']} tokens, {chunk['memories']} memories)"
            )
        elif event == "tool_call":
            args = chunk.get("args")
            shown = args.get("path", "") if isinstance(args, dict) else ""
            c.print(f"  → {chunk.get('tool_name')} {escape(str(shown))}", highlight=False)
        elif event == "tool_result" and chunk.get("status") == "error":
            c.print(f"    [red]error[/red] {escape(str(chunk.get('error', ''))[:160])}")
        elif event == "executor.draft":
            mark = "passed" if chunk.get("passed") else "failed"
            c.print(f"  draft {chunk['candidate']} (temperature {chunk['temperature']}): "
                    f"contract {escape(str(chunk['summary']))} → {mark}")  # fmt: skip
        elif event == "reflector.cross_examination":
            c.print(f"  cross-examined by {chunk['witnesses']} independent implementation(s): "
                    f"{chunk['suspect']} check(s) suspect")  # fmt: skip
        elif event == "reflector.verdict":
            outcome = _VERDICT.get(chunk["outcome"], chunk["outcome"])
            c.print(f"  verdict: {outcome} → {chunk['decision']}")
        elif event == "run.budget":
            c.print(f"  [yellow]budget spent[/yellow] in the {chunk.get('node')}: "
                    f"{escape(str(chunk.get('reason', '')))}")  # fmt: skip
        elif event == "run.finish":
            c.print(f"[bold]{chunk['status']}[/bold]: {escape(str(chunk.get('reason', '')))}")
        elif self.verbose and event:
            c.print(f"  [dim]{escape(str(chunk))}[/dim]")

    def _token(self, piece: dict[str, Any]) -> None:
        """One decoded piece: the reply's line, redrawn (terminals only)."""
        run = str(piece.get("run", ""))
        if piece.get("last"):
            self._growing.pop(run, None)
            self._clear()
            return
        if not self.console.is_terminal:
            return
        count, text = self._growing.get(run, (0, ""))
        count, text = count + 1, (text + str(piece.get("text", "")))[-400:]
        self._growing[run] = (count, text)
        tail = " ".join(text.split())
        room = max(self.console.width - 24, 10)
        line = f"  … model: {count} tokens {tail[-room:]}"
        self.console.file.write("\r\x1b[2K" + line[: self.console.width - 1])
        self.console.file.flush()
        self._shown = True

    def _clear(self) -> None:
        """Erase the growing reply's line before anything else is printed."""
        if self._shown:
            self.console.file.write("\r\x1b[2K")
            self.console.file.flush()
            self._shown = False

    def _plan(self, plan: dict[str, Any], revision: int) -> None:
        table = Table(title=f"Plan (revision {revision})", show_lines=False)
        for column in ("step", "title", "after", "criteria", "checks"):
            table.add_column(column)
        for s in plan.get("steps", []):
            table.add_row(
                s["id"],
                escape(s["title"]),
                ", ".join(s.get("depends_on", [])) or "–",
                str(len(s.get("acceptance_criteria", []))),
                str(len(s.get("checks", []))),
            )
        table.caption = plan_clauses(plan)
        self.console.print(table)
        for s in plan.get("steps", []):
            for check in s.get("checks", [])[:12]:
                shown = Check.model_validate(check).describe()
                self.console.print(f"  [dim]{s['id']} check ({check.get('origin')}):[/dim] "
                                   f"{escape(shown[:140])}")  # fmt: skip


def plan_clauses(plan: dict[str, Any]) -> str:
    """``13 clauses: 11 with checks, 2 unchecked (…)`` for a plan before anything ran."""
    clauses = plan.get("clauses") or []
    if not clauses:
        return ""
    covered = {c.get("clause") for s in plan.get("steps", []) for c in s.get("checks", [])}
    unchecked = [c for c in clauses if c["id"] not in covered]
    text = f"{len(clauses)} clauses: {len(clauses) - len(unchecked)} with checks"
    if unchecked:
        shown = "; ".join(f'"{" ".join(c["text"].split())[:50]}"' for c in unchecked[:3])
        text += f", {len(unchecked)} unchecked ({shown}{'; …' if len(unchecked) > 3 else ''})"
    return text
