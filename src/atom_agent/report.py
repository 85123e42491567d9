"""report.md: the plan as a mermaid DAG coloured by verdict, per-step table, artifacts, usage."""

from __future__ import annotations

from typing import Any

from atom_agent.errors import WorkspaceError
from atom_agent.state import Plan
from atom_agent.workspace import RunRef, Workspace

_CLASSES = {
    "committed": "fill:#c8f7c5,stroke:#2e7d32",
    "failed": "fill:#f8c4c4,stroke:#c62828",
    "blocked": "fill:#eeeeee,stroke:#9e9e9e",
    "pending": "fill:#fff3c4,stroke:#f9a825",
}


def _label(text: str) -> str:
    return text.replace('"', "'").replace("\n", " ")[:60]


def mermaid(plan: Plan, statuses: dict[str, str]) -> str:
    """The plan as a mermaid flowchart, nodes classed by status."""
    lines = ["```mermaid", "flowchart TD"]
    for step in plan.steps:
        status = statuses.get(step.id, "pending")
        lines.append(f'    {_node(step.id)}["{_label(step.id + ": " + step.title)}"]:::{status}')
    for step in plan.steps:
        for dep in step.depends_on:
            lines.append(f"    {_node(dep)} --> {_node(step.id)}")
    for name, style in _CLASSES.items():
        lines.append(f"    classDef {name} {style}")
    lines.append("```")
    return "\n".join(lines)


def _node(step_id: str) -> str:
    return "s_" + step_id.replace("-", "_")


def criteria_summary(criteria: list[dict[str, Any]]) -> str:
    """``2 verified, 1 unverified`` (statuses in a fixed order)."""
    counts: dict[str, int] = {}
    for c in criteria:
        status = str(c.get("status") or "unverified")
        counts[status] = counts.get(status, 0) + 1
    order = ("verified", "held", "failed", "suspect", "unverified")
    return ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s))


def shown_criteria(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """A verdict's criteria as reports show them: *held*, not *verified*, in an unverified step.

    A step is unverified when a clause it answers for has no check, a public name of it had
    no result checked, or it was committed on the task's checks only (``verified`` false in
    verdict.json; verdicts written before that field count as verified).
    """
    criteria = list(verdict.get("criteria") or [])
    if verdict.get("verified", True):
        return criteria
    return [{**c, "status": "held"} if c.get("status") == "verified" else c for c in criteria]


_UNVERIFIED = ("not verified", "committed on the task's own checks")


def check_report(verdict: dict[str, Any]) -> dict[str, Any]:
    """The checks a verdict ran (summary, results): a module step's contract, a project's checks."""
    return dict(verdict.get("contract") or verdict.get("checks") or {})


def _project_evidence(step_id: str, attempt: int, verdict: dict[str, Any]) -> str:
    """A project step's verdict: its decision and why, each check run, the suite before/after."""
    label = "verified" if verdict.get("verified") else "not verified"
    lines = [f"### {step_id} (attempt {attempt}: {verdict.get('decision')}, {label})"]
    lines.append(f"- {verdict.get('reason', '')}")
    for result in check_report(verdict).get("results") or []:
        got = f" (got {str(result.get('got'))[:80]})" if result.get("status") != "passed" else ""
        lines.append(f"- **{result.get('status')}** — `{str(result.get('check'))[:200]}`{got}")
    suite = verdict.get("suite") or {}
    if suite:
        before, after = suite.get("before") or {}, suite.get("after") or {}
        regressions = ", ".join(suite.get("regressions") or []) or "none"
        lines.append(
            f"- the project's tests: {before.get('passed', 0)} passed before, "
            f"{after.get('passed', 0)} after; regressions: {regressions}"
        )
    return "\n".join(lines)


def _evidence_section(step_id: str, verdict: dict[str, Any]) -> str:
    lines = [f"### {step_id} (attempt {verdict.get('attempt', '?')}: {verdict.get('outcome')})"]
    if not verdict.get("verified", True):
        why = [r for r in verdict.get("decision_reasons") or [] if r.startswith(_UNVERIFIED)]
        lines.append("- **not verified** — " + ("; ".join(why) or "see the verdict"))
    for c in shown_criteria(verdict):
        lines.append(f"- **{c.get('status', 'unverified')}** — {c.get('criterion', '')}")
        for item in (c.get("evidence") or [])[:6]:
            lines.append(f"  - {str(item)[:300]}")
    for use in verdict.get("names") or []:
        if use.get("status") == "unexercised":
            lines.append(
                f"- **unexercised** — `{use.get('name')}`: no executed check and no passing test "
                "used it"
            )
        elif use.get("status") == "errors only":
            lines.append(
                f"- **errors only** — `{use.get('name')}`: only checks that it raises ran; "
                "no result of it was checked"
            )
    cross = verdict.get("cross_examination") or {}
    for s in cross.get("suspect_checks") or []:
        lines.append(f"- suspect check: `{s.get('check', '')[:200]}` — {s.get('reason', '')}")
    # What ran and failed is reported as failed, with what outranked it: never silently.
    for item in verdict.get("overruled") or []:
        lines.append(f"- **failed, outranked** — {str(item)[:400]}")
    for item in verdict.get("gaming") or []:
        lines.append(f"- **answers the checks** — {str(item)[:300]}")
    return "\n".join(lines)


def budget_line(figures: dict[str, Any]) -> str:
    """``2512 of 2500 tokens · 401.3 s of 400.0 s``: what the run used beside each budget."""
    parts: list[str] = []
    if "max_tokens" in figures:
        parts.append(f"{figures.get('tokens', 0)} of {figures['max_tokens']} tokens")
    if "max_seconds" in figures:
        parts.append(f"{figures.get('seconds', 0.0):.1f} s of {figures['max_seconds']:.1f} s")
    if "time_limit" in figures:
        used, limit = figures.get("seconds", 0.0), figures["time_limit"]
        parts.append(f"{used:.1f} s of {limit:.1f} s (its time limit beside the plain answer)")
    if "max_cost_usd" in figures:
        parts.append(f"${figures.get('cost_usd', 0.0):.4f} of ${figures['max_cost_usd']:.4f}")
    return " · ".join(parts)


def calls_table(calls: dict[str, dict[str, float]]) -> list[str]:
    """Report lines: the run's model calls by what they were for ([] when it made none)."""
    if not calls:
        return []
    lines = [
        "## Model calls by purpose",
        "",
        "| purpose | calls | tokens in | tokens out | seconds | hit their cap |",
        "|---|---|---|---|---|---|",
    ]
    for purpose, row in sorted(calls.items(), key=lambda kv: -kv[1].get("seconds", 0.0)):
        lines.append(
            f"| {purpose} | {int(row.get('calls', 0))} | {int(row.get('input_tokens', 0))} | "
            f"{int(row.get('output_tokens', 0))} | {row.get('seconds', 0.0):.1f} | "
            f"{int(row.get('capped', 0))} |"
        )
    return [*lines, ""]


def render_report(workspace: Workspace, run: RunRef, state: dict[str, Any]) -> str:
    """The markdown report of a run, from its state and its files."""
    info = workspace.read_run(run)
    lines = _header_lines(run, info, state)
    raw_plan = state.get("plan")
    if not raw_plan:
        lines.append("No plan was made.")
        return "\n".join(lines) + "\n"
    plan = Plan.model_validate(raw_plan)
    statuses = dict(state.get("step_status") or {})
    lines += [
        f"## Plan (revision {state.get('plan_revision', 1)})",
        "",
        mermaid(plan, statuses),
        "",
    ]
    rows, artifacts, evidence = _steps_table(workspace, run, plan, statuses)
    lines += rows
    lines += clause_lines(plan, info.get("clauses") or {})
    lines += _verification_lines(evidence, artifacts)
    lines += memory_lines(state)
    lines += _usage_lines(state.get("usage") or {}, info)
    return "\n".join(lines)


def _header_lines(run: RunRef, info: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """Title, task, status, the prompts replaced, the budget, model calls and rules in force."""
    lines = [
        f"# Run {run.run_id}",
        "",
        f"**Task:** {info.get('task', state.get('task', ''))}",
        "",
        f"**Status:** {state.get('status', 'unknown')}"
        + (f" — {state['stop_reason']}" if state.get("stop_reason") else ""),
        "",
    ]
    replaced, unsent = info.get("prompts_replaced") or [], info.get("prompts_unsent") or []
    if replaced or unsent:
        said = [f"yours replaced {', '.join(replaced)}"] if replaced else []
        said += [f"given but not sent in this run: {', '.join(unsent)}"] if unsent else []
        lines += [f"**Prompts:** {'; '.join(said)}", ""]
    if state.get("budget"):
        lines += [f"**Budget:** {budget_line(state['budget'])}", ""]
    lines += calls_table(state.get("calls") or {})
    lines += rule_lines(info.get("rules") or {})
    return lines


def _steps_table(
    workspace: Workspace, run: RunRef, plan: Plan, statuses: dict[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """The per-step table, with the artifact lines and evidence sections gathered on the way."""
    lines = [
        "## Steps",
        "",
        "| step | status | attempts | checks (contract) | tests | criteria | artifacts |",
        "|---|---|---|---|---|---|---|",
    ]
    artifacts: list[str] = []
    evidence: list[str] = []
    for step in plan.steps:
        status = statuses.get(step.id, "pending")
        try:
            ref = workspace.step(run, step.id)
        except WorkspaceError:  # a step the run never reached has no directory
            lines.append(f"| {step.id} | {status} | 0 | – | – | – | – |")
            continue
        attempts = workspace.list_attempts(ref)
        tests, criteria, checks = "–", "–", "–"
        if attempts and attempts[-1].verdict_json.exists():
            verdict = workspace.read_verdict(attempts[-1])
            tests = str((verdict.get("tests") or {}).get("summary", "–"))
            checks = str(check_report(verdict).get("summary", "–"))
            shown = shown_criteria(verdict)
            if shown:
                criteria = criteria_summary(shown)
                evidence.append(_evidence_section(step.id, verdict))
            elif "checks" in verdict:  # a project step's verdict
                evidence.append(_project_evidence(step.id, attempts[-1].n, verdict))
        files = (
            sorted(p.name for p in ref.artifacts.iterdir() if p.is_file())
            if ref.artifacts.is_dir()
            else []
        )
        artifacts += [f"- `{ref.artifacts / f}`" for f in files]
        lines.append(
            f"| {step.id} | {status} | {len(attempts)} | {checks} | "
            f"{tests} | {criteria} | {', '.join(files) or '–'} |"
        )
    return lines, artifacts, evidence


def _verification_lines(evidence: list[str], artifacts: list[str]) -> list[str]:
    """The verification legend with each step's evidence, then the committed artifacts."""
    return [
        "",
        "## Verification (last attempt of each step)",
        "",
        "*verified*: a check ran in the sandbox and held; *held*: the same, in a step that is "
        "not verified (a clause of it has no check, a name of it had no result checked, or it "
        "was committed on the task's checks only); *failed*: it ran and did not; "
        "*suspect*: every independent implementation contradicted its checks, so they were not "
        "used; *unverified*: nothing executed backs it (no model's opinion counts). "
        "A defined name is *unexercised* when no executed check and no passing test used it, "
        "*errors only* when only checks that it raises did.",
        "",
        *(evidence or ["No verdicts."]),
        "",
        "## Artifacts",
        "",
        *(artifacts or ["None committed."]),
        "",
    ]


def _usage_lines(usage: dict[str, Any], info: dict[str, Any]) -> list[str]:
    """Model calls, tokens, estimated cost and wall time of the run."""
    return [
        "",
        "## Usage",
        "",
        f"- model calls: {int(usage.get('model_calls', 0))}",
        f"- tokens: {int(usage.get('input_tokens', 0))} in, "
        f"{int(usage.get('output_tokens', 0))} out",
        f"- estimated cost: ${usage.get('cost_usd', 0.0):.4f}",
        f"- wall time: {info.get('duration_s', '–')} s",
        "",
    ]


def clause_lines(plan: Plan, clauses: dict[str, Any]) -> list[str]:
    """The task's clauses, each with its checks and what executing them gave (run.json)."""
    if not plan.clauses:
        return []
    status = {
        cid: label
        for label in ("verified", "failed", "not_run", "unchecked")
        for cid in clauses.get(label) or []
    }
    checks: dict[str, int] = {}
    for step in plan.steps:
        for check in step.checks:
            if check.clause:
                checks[check.clause] = checks.get(check.clause, 0) + 1
    lines = ["", "## Clauses of the task", "", str(clauses.get("summary") or ""), ""]
    lines += ["| clause | kind | checks | status |", "|---|---|---|---|"]
    for clause in plan.clauses:
        text = " ".join(clause.text.split()).replace("|", "\\|")
        text = text if len(text) <= 100 else text[:100] + "…"
        label = status.get(clause.id, "pending").replace("_", " ")
        lines.append(
            f"| {clause.id}: {text} | {clause.kind} | {checks.get(clause.id, 0)} | {label} |"
        )
    return lines


RULE_STATUS = {
    "verified": "verified (checks of each thing it asks ran and held)",
    "partly": "verified in part ({held} of {of} things it asks; no check of the rest ran: {rest})",
    "failed": "failed (a check read from it ran and did not hold)",
    "carried": "carried (in every prompt; no check of it ran)",
}


def rule_lines(info: dict[str, Any]) -> list[str]:
    """The project's rules this run applied: carried from earlier runs or stated in its task."""
    applied = info.get("applied") or []
    superseded = info.get("superseded") or []
    if not applied and not superseded:
        return []
    lines = ["## Project rules", ""]
    for rule in applied:
        origin = "stated in this task" if rule.get("origin") == "stated" else "stated earlier"
        status = RULE_STATUS.get(str(rule.get("status")), str(rule.get("status")))
        if rule.get("status") == "partly":
            held, rest = rule.get("verified") or [], rule.get("unchecked") or []
            status = status.format(held=len(held), of=len(held) + len(rest), rest=", ".join(rest))
        content = " ".join(str(rule.get("content") or "").split())
        content = content if len(content) <= 200 else content[:200] + "…"
        lines.append(f"- `{rule.get('id')}` {content} — {origin}; {status}")
    for change in superseded:
        by = f", replaced by `{change['by']}`" if change.get("by") else " (withdrawn)"
        lines.append(f"- `{change.get('id')}` superseded by this task{by}")
    return [*lines, ""]


def memory_lines(state: dict[str, Any]) -> list[str]:
    """The memories a run wrote and the memories its prompts recalled, with their ids.

    From ``state["memories"]``, which the finish node gathers (``written`` / ``recalled``
    notes: id, type, content, and for a recalled one why it was chosen).
    """
    notes = state["memories"]
    written, recalled = notes["written"], notes["recalled"]
    lines = ["## Memories written", "", f"{len(written)} long-term memories"]
    lines += [_memory_line(m) for m in written[:50]]
    lines += [
        "",
        "## Memories recalled",
        "",
        f"{len(recalled)} long-term memories in prompts, each with what it shares with the step "
        "(recalled memories that share no name, file or purpose are left out of prompts)",
    ]
    lines += [_memory_line(m) for m in recalled[:50]]
    return lines


def _memory_line(note: dict[str, Any]) -> str:
    line = f"- `{note.get('id', '?')}`"
    if note.get("type"):
        line += f" ({note['type']})"
    content = str(note.get("content") or "").replace("\n", " ")
    if content:
        line += " " + (content if len(content) <= 160 else content[:160] + "…")
    if note.get("why"):
        line += f" — *{note['why']}*"
    return line
