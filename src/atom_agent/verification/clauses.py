"""A task's clauses, found by code, each with the checks that execute it.

A task states behaviour sentence by sentence: a signature with its defaults, an error and the
inputs that raise it, worked examples, a property "for any …". Each sentence (or bullet, or
``;``-separated part) is a clause; code gives it the checks it can read with certainty:

- a stated signature (``resize(width: int, height: int, keep_ratio: bool = True)``,
  ``push(item)`` of a class) → an ``inspect.signature`` check of its parameter names and
  defaults, no model involved;
- examples in any form the extractor reads (``f(x) == y``, ``'a' -> 'b'``, doctests, "'hey'
  comes out as 'HEY!'") and errors with their inputs ("raises ValueError on codes such as
  'x9' or ''", "e.g.", "for example");
- errors stated as conditions on a parameter, and what a call gives or raises on a new object
  (:mod:`.conditions`, :mod:`.outcomes`);
- a property ("from_hex(to_hex(n)) == n for any non-negative integer", "packing then
  unpacking gives back the list") → a Hypothesis test over generated inputs, whose failure
  names the shrunk counterexample (:mod:`.properties`).

Every phrasing read is a named row of :data:`~atom_agent.verification.rules.RULES`; each clause
records the rows that built its checks.

The planner model's contract comes second: its checks are attributed to the clause they share
the most with (:func:`attribute`). A clause with no check is listed as *unchecked*, never
verified (:func:`coverage`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from atom_agent.checks.contract import SIGNATURE_CRITERION, check_problems
from atom_agent.checks.extract import TASK_CRITERION, is_literal, task_checks
from atom_agent.names import code_blocks, named_in_text, without_methods, without_shorthands
from atom_agent.rule_text import (
    RULES_HEADER,
    StatedRule,
    carried_rules,
    find_rules,
    norm_words,
    own_task,
)
from atom_agent.state import Check, Clause
from atom_agent.verification.conditions import (
    ERROR_CRITERION,
    Stated,
    condition_checks,
    described_constructions,
)
from atom_agent.verification.examples import error_examples, prose_examples
from atom_agent.verification.outcomes import outcome_checks
from atom_agent.verification.properties import PROPERTY_CRITERION, property_checks
from atom_agent.verification.rules import Fired, search, unique
from atom_agent.verification.signatures import closing_paren, signature_checks, stated_signatures
from atom_agent.verification.standing import (
    MESSAGE_NAMES_ARGUMENT,
    Signature,
    message_check,
    standing_checks,
)

__all__ = [
    "CODE_CRITERIA",
    "PROPERTY_CRITERION",
    "SIGNATURE_CRITERION",
    "SIGNATURE_PASSED",
    "Coverage",
    "attribute",
    "coverage",
    "placed",
    "restates_task",
    "split_clauses",
    "states_behaviour",
    "task_clauses",
]

CODE_CRITERIA = frozenset(
    {SIGNATURE_CRITERION, PROPERTY_CRITERION, ERROR_CRITERION, TASK_CRITERION}
)
"""The criteria of the checks code reads from the task (the rest are the planner's prose)."""

_FENCE_MARK = re.compile(r"```[A-Za-z0-9_+-]*")
_EXC = re.compile(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception)|[A-Z][a-z]+[A-Z][A-Za-z]*)\b")
_LITERAL = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]+`|-?\d+(?:\.\d+)?")


def task_clauses(task: str, *, names: Sequence[str] | None = None) -> list[Clause]:
    """The clauses of `task` with the checks code can read from each (ids ``c1``, ``c2`` …).

    Each clause records the rules of :data:`~atom_agent.verification.rules.RULES` that built
    its checks. A request for tests that states nothing to check is no clause.

    Args:
        task: the task as the user wrote it.
        names: the functions and classes the task asks for (default: those it names).
    """
    mentioned = without_shorthands(named_in_text(task))
    names = list(names) if names is not None else without_methods(task, mentioned)
    classes = [n for n in names if n[:1].isupper()]
    # Methods have signatures too, but are never called bare in an example.
    signed = list(dict.fromkeys([*names, *mentioned]))
    clauses: list[Clause] = []
    seen: set[str] = set()
    parts = _statements(task, split_clauses(task), signed, classes)
    rules = _standing_rules(task)
    parts = _demands(parts, rules)
    stated = _stated(task, parts, signed, classes)
    examples = _example_arguments(task, names)
    constructible = [c for c in classes if c in stated or re.search(rf"\b{c}\(\)", task)]
    for i, (text, start) in enumerate(parts):
        before = parts[i - 1][0] if i else ""
        same_sentence = before if before.rstrip().endswith((";", ":", ",")) else ""
        after = parts[i + 1][0] if i + 1 < len(parts) else ""
        fired = _clause_checks(task, text, start, names, classes, signed, stated, same_sentence)
        fired += _conditions(text, after, same_sentence, classes, stated, examples,
                             constructible)  # fmt: skip
        fired += outcome_checks(text, stated, examples, constructible, same_sentence)
        fresh = [f for f in unique(fired) if not check_problems(f.check, defines=names)]
        fresh = [f for f in fresh if f.check.describe() not in seen]
        if not fresh and search("tests_request", text):
            continue
        seen |= {f.check.describe() for f in fresh}
        clause_id = f"c{len(clauses) + 1}"
        clauses.append(
            Clause(
                id=clause_id,
                text=text,
                kind=_kind(text, [f.check for f in fresh]),
                checks=[f.check.model_copy(update={"clause": clause_id}) for f in fresh],
                rules=list(dict.fromkeys(r for f in fresh for r in f.rules)),
            )
        )
    clauses = _with_standing_rules(rules, clauses, names, _signatures(task, stated, examples))
    examples_clause = _examples_clause(task, names, clauses, seen)
    return clauses if examples_clause is None else [*clauses, examples_clause]


def _examples_clause(
    task: str, names: list[str], clauses: list[Clause], seen: set[str]
) -> Clause | None:
    """The examples code reads only from the whole text (doctest blocks, code) no clause has.

    They make a clause of their own, the last; None when every such check is in a clause.
    """
    calls = {c.call for cl in clauses for c in cl.checks}
    rest = [
        c
        for c in task_checks(task, names=names)
        if c.describe() not in seen and c.call not in calls and not check_problems(c, defines=names)
    ]
    if not rest:
        return None
    clause_id = f"c{len(clauses) + 1}"
    return Clause(
        id=clause_id,
        text="the examples in the task's code",
        kind="example",
        checks=[c.model_copy(update={"clause": clause_id}) for c in rest],
        rules=["code_example"],
    )


def _signatures(
    task: str, stated: Mapping[str, Stated], examples: Mapping[str, list[str]]
) -> dict[str, Signature]:
    """The functions the task states, for the checks its standing rules state over calls."""
    own = own_task(task)
    found: dict[str, Signature] = {}
    for sig in stated.values():
        if sig.owner or sig.name[:1].isupper():
            continue
        returns = re.search(rf"\b{re.escape(sig.name)}\([^)]*\)\s*->\s*([\w\[\], .]+)", own)
        found[sig.name] = Signature(
            name=sig.name, params=sig.params, annotations=sig.annotations,
            defaults=sig.defaults, example=tuple(examples.get(sig.name) or ()),
            returns=returns[1].strip() if returns else "",
        )  # fmt: skip
    return found


def _with_standing_rules(
    rules: Sequence[str],
    clauses: list[Clause],
    names: Sequence[str],
    signatures: Mapping[str, Signature],
) -> list[Clause]:
    """The project's `rules` (carried, or stated in the task) with the checks they state.

    The block's heading is no clause. A rule is a clause per demand (:func:`_demands`); its
    checks over the task's functions (:func:`standing_checks`) go to the demand whose own words
    state them; a rule that an error's message starts with the argument's name also checks each
    call the other checks expect to raise (:func:`message_check`), under that demand.
    """
    functions = [n for n in names if n[:1].islower()]
    built = _rule_checks(rules, clauses, functions, signatures)
    kept: list[Clause] = []
    for clause in clauses:
        if clause.text.strip().startswith(RULES_HEADER.rstrip(":")):
            continue
        mine = built.get(clause.id, [])
        extra = [c.model_copy(update={"clause": clause.id})
                 for c in mine if not check_problems(c, defines=names)]  # fmt: skip
        if extra:
            clause = clause.model_copy(update={
                "checks": [*clause.checks, *extra],
                "rules": [*clause.rules, "standing_rule"],
                "kind": "signature" if clause.kind == "behaviour" else clause.kind,
            })  # fmt: skip
        kept.append(clause)
    return [_renumbered(c, f"c{i}") for i, c in enumerate(kept, 1)]


def _rule_checks(
    rules: Sequence[str],
    clauses: Sequence[Clause],
    functions: Sequence[str],
    signatures: Mapping[str, Signature],
) -> dict[str, list[Check]]:
    """Per clause id, the checks of the rule whose demand the clause is.

    A check goes to the demand whose own words state it (else the rule's first); a rule's
    message check goes to the demand that speaks of the message.
    """
    demands: dict[str, list[Clause]] = {}
    for clause in clauses:
        words = norm_words(clause.text)
        rule = next((r for r in rules if words and words in norm_words(r)), None)
        if rule is not None:
            demands.setdefault(rule, []).append(clause)
    built: dict[str, list[Check]] = {}
    for rule, mine in demands.items():
        checks = standing_checks(rule, functions, signatures)
        for check in checks:
            owner = next((c for c in mine if _states(c.text, check, functions, signatures)),
                         mine[0])  # fmt: skip
            built.setdefault(owner.id, []).append(check)
        if MESSAGE_NAMES_ARGUMENT.search(rule):
            owner = next((c for c in mine if MESSAGE_NAMES_ARGUMENT.search(c.text)), mine[0])
            raising = [c for cl in clauses for c in cl.checks if c.raises] + checks
            built.setdefault(owner.id, []).extend(
                m for c in raising
                if (sig := signatures.get(c.call.split("(")[0].strip())) is not None
                and (m := message_check(c, sig)) is not None
            )  # fmt: skip
    return built


def _states(
    text: str, check: Check, functions: Sequence[str], signatures: Mapping[str, Signature]
) -> bool:
    """Whether the words `text` alone state `check` as a standing rule."""
    said = check.describe()
    return any(c.describe() == said for c in standing_checks(text, functions, signatures))


def _standing_rules(task: str) -> list[str]:
    """The project's rules in `task`: carried in its rules block, or stated in its own words."""
    return [
        *carried_rules(task),
        *(s.text for s in find_rules(own_task(task)) if isinstance(s, StatedRule)),
    ]


_AND_DEMAND = re.compile(r",\s+and\s+")


def _demands(parts: Sequence[tuple[str, int]], rules: Sequence[str]) -> list[tuple[str, int]]:
    """`parts` with a standing rule that asks several things split into a clause per demand.

    "…: amounts are integers in cents, and an invalid argument raises ValueError" asks two
    things; as one clause, a check of the error would call the whole rule verified. A part is
    cut at ", and" outside brackets and quotes, where both sides have three words or more, when
    it is (part of) one rule, or when each piece is (part of) a rule (a sentence that stated
    two rules at once).
    """
    normed = [norm_words(r) for r in rules]

    def in_rule(text: str) -> bool:
        words = norm_words(text)
        return bool(words) and any(words in r for r in normed)

    out: list[tuple[str, int]] = []
    for text, start in parts:
        pieces, cut, top = [], 0, set(_top_level(text))
        for match in _AND_DEMAND.finditer(text):
            left, right = text[cut : match.start()].strip(), text[match.end() :]
            if match.start() not in top or len(left.split()) < 3 or len(right.split()) < 3:
                continue
            pieces.append((left, start + cut))
            cut = match.end()
        pieces.append((text[cut:], start + cut))
        whole = in_rule(text)
        out += pieces if whole or all(in_rule(p) for p, _ in pieces) else [(text, start)]
    return out


def _top_level(text: str) -> Iterator[int]:
    """The offsets of `text`'s characters outside brackets and quotes (not those marks)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`" and (i == 0 or not text[i - 1].isalnum()):
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i


def _renumbered(clause: Clause, new_id: str) -> Clause:
    if clause.id == new_id:
        return clause
    checks = [c.model_copy(update={"clause": new_id}) for c in clause.checks]
    return clause.model_copy(update={"id": new_id, "checks": checks})


def _conditions(
    text: str,
    after: str,
    previous: str,
    classes: Sequence[str],
    stated: Mapping[str, Stated],
    examples: Mapping[str, Sequence[str]],
    constructible: Sequence[str],
) -> list[Fired]:
    """The condition checks of clause `text`, read with the clause that carries it on.

    "The label must be a non-empty string …; otherwise tag raises ValueError" is one rule: the
    conditions are read from both, and a check only the two together give is the join's too.
    """
    joined = search("otherwise_clause", after) is not None
    read = f"{text} {after}" if joined else text
    here = {**stated, **described_constructions(read, classes, stated)}
    fired = condition_checks(read, here, examples, constructible, previous)
    if not joined:
        return fired
    alone = condition_checks(text, here, examples, constructible, previous)
    alone_said = {f.check.describe() for f in alone}
    return [
        f if f.check.describe() in alone_said else Fired(("otherwise_clause", *f.rules), f.check)
        for f in fired
    ]


_AND_NEXT = re.compile(r",\s+and\s+(?=([A-Za-z_]\w*)\()")


def _statements(
    task: str, parts: Sequence[tuple[str, int]], signed: Sequence[str], classes: Sequence[str]
) -> list[tuple[str, int]]:
    """`parts` with a sentence stating two signatures split into one clause per signature.

    "Write load(path: str) -> dict that reads …, and save(path, data) that writes …" states
    two functions: each statement is a clause, so a check of one never covers the
    other. Only at ", and name(" where a signature is stated; "f(s) and g(s) for …", which
    says one thing of both, stays whole.
    """
    out: list[tuple[str, int]] = []
    for text, start in parts:
        cut = 0
        for match in _AND_NEXT.finditer(text):
            rest = text[match.end() :]
            stated = stated_signatures(task, rest, start + match.end(), signed, classes)
            name = match.group(1)  # where `rest` starts
            if stated and stated[0].name == name and text[cut : match.start()].strip():
                out.append((text[cut : match.start()].strip(), start + cut))
                cut = match.end()
        out.append((text[cut:], start + cut))
    return out


def _stated(
    task: str, parts: Sequence[tuple[str, int]], signed: Sequence[str], classes: Sequence[str]
) -> dict[str, Stated]:
    """Every signature the task states, by qualified name (``f``, ``C``, ``C.m``)."""
    found: dict[str, Stated] = {}
    for text, start in parts:
        for sig in stated_signatures(task, text, start, signed, classes):
            qualified = f"{sig.owner}.{sig.name}" if sig.owner else sig.name
            found.setdefault(
                qualified,
                Stated(
                    name=sig.name,
                    owner=sig.owner,
                    params=tuple(p for p, _ in sig.params),
                    annotations=sig.annotations,
                    defaults=tuple(d for _, d in sig.params),
                ),
            )
    return found


def _example_arguments(task: str, names: Sequence[str]) -> dict[str, list[str]]:
    """The positional arguments of each function's first worked example (a valid call)."""
    found: dict[str, list[str]] = {}
    for check in task_checks(task, names=list(names)):
        if check.raises or "\n" in check.call.strip():
            continue
        try:
            node = ast.parse(check.call.strip(), mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and not node.keywords
            and all(is_literal(ast.unparse(a)) for a in node.args)
        ):
            found.setdefault(node.func.id, [ast.unparse(a) for a in node.args])
    return found


def split_clauses(task: str) -> list[tuple[str, int]]:
    """Sentences, bullets and ``;``-parts of `task` outside code, with their start offsets."""
    text = task
    for block in code_blocks(task):
        text = text.replace(block, " " * len(block))
    # The fences too: "```python" is no sentence of the task (offsets stay as they were).
    text = _FENCE_MARK.sub(lambda m: " " * len(m.group()), text)
    parts: list[tuple[str, int]] = []
    start = 0
    for i in _top_level(text):
        if _ends_clause(text, i):
            parts.append((text[start : i + 1], start))
            start = i + 1
    parts.append((text[start:], start))
    out: list[tuple[str, int]] = []
    for part, offset in parts:
        stripped = part.strip().strip("-*").strip()
        if len(re.findall(r"[A-Za-z]", stripped)) >= 3:
            out.append((stripped, offset + part.find(stripped[:1])))
    return out


def _ends_clause(text: str, i: int) -> bool:
    ch = text[i]
    if ch == "\n":
        return text[i + 1 : i + 2] == "\n" or bool(re.match(r"\s*[-*]\s", text[i + 1 :]))
    if ch == ";":
        return True
    if ch not in ".!?":
        return False
    after = text[i + 1 : i + 2]
    if after and not after.isspace():
        return False  # 3.5, e.g., file.py
    before = text[max(0, i - 4) : i + 1].lower()
    return not before.endswith(("e.g.", "i.e.", "etc.", "vs."))


def _kind(text: str, checks: Sequence[Check]) -> str:
    if any(c.criterion == SIGNATURE_CRITERION for c in checks):
        return "signature"
    if any(c.criterion == PROPERTY_CRITERION for c in checks):
        return "property"
    states_error = _EXC.search(text) and re.search(r"rais|throw|fail", text, re.IGNORECASE)
    if checks and all(c.raises for c in checks) or states_error:
        return "error"
    if checks:
        return "example"
    return "behaviour"


def _clause_checks(
    task: str,
    text: str,
    start: int,
    names: list[str],
    classes: list[str],
    signed: list[str],
    stated: Mapping[str, Stated],
    previous: str,
) -> list[Fired]:
    fired = [Fired(("stated_signature",), c)
             for c in signature_checks(task, text, start, signed, classes)]  # fmt: skip
    fired += [Fired(("worked_example",), c) for c in task_checks(text, names=names)]
    fired += prose_examples(text, names, stated)
    fired += [
        Fired(("error_with_examples",), c)
        for c in error_examples(text, names, task=task, previous=previous)
    ]
    fired += property_checks(task, text, names, stated)
    # Only what can run on code that defines the task's names (not ``decode(encode(s)) == s``
    # as a bare example: its `s` is the property's variable).
    return [f for f in fired if not check_problems(f.check, defines=names)]


# --- the planner model's checks, and coverage ----------------------------------------------------


def attribute(
    check: Check, clauses: Sequence[Clause], *, rules: Collection[str] = frozenset()
) -> str:
    """The clause a model-written check executes: the one it shares most with ('' if none).

    Shared: the exception it expects, the names it calls, the literals it uses. A clause of a
    project rule (its id in `rules`) counts only the exception and the literals: the rule names
    no function, and a parameter's name it happens to use ("a negative count …") is no sign the
    check executes it.
    """
    best, best_score = "", 0
    names = set(re.findall(r"[A-Za-z_]\w*", check.call))
    for clause in clauses:
        if clause.kind == "signature":
            continue
        score = _specific(check, clause)
        if clause.id not in rules:
            score += sum(1 for n in names if len(n) > 2 and re.search(rf"\b{n}\b", clause.text))
        if score > best_score:
            best, best_score = clause.id, score
    return best


def _specific(check: Check, clause: Clause) -> int:
    """What a check shares with a clause beyond words: its exception (3), each literal (2)."""
    literals = set(_LITERAL.findall(check.call + " " + check.expect))
    score = 3 if check.raises and check.raises.split(".")[-1] in clause.text else 0
    return score + sum(2 for lit in literals if len(lit) > 1 and lit in clause.text)


def placed(
    check: Check, task: str, clauses: Sequence[Clause], rules: Collection[str] | None = None
) -> Check:
    """A model-written check with its clause; one that only restates the task is the task's.

    The model names the clause its check covers; a project rule's clause keeps that only when
    the check shares its exception or a literal with the rule (a model that files a check of
    what the function computes under "every public function is type-annotated" verifies no
    rule), else the check is attributed as if unnamed. `rules`: :func:`rule_clauses` of the
    task, when the caller places many checks (read from the task when not given).
    """
    if check.origin != "planner":
        return check
    rules = rule_clauses(task, clauses) if rules is None else rules
    named = next((c for c in clauses if c.id == check.clause), None)
    keep = named is not None and (named.id not in rules or _specific(check, named) > 0)
    clause = check.clause if keep else attribute(check, clauses, rules=rules)
    update: dict[str, str] = {"clause": clause}
    if restates_task(check, task):
        update["origin"] = "task"
    return check.model_copy(update=update)


def rule_clauses(task: str, clauses: Sequence[Clause]) -> set[str]:
    """The ids of the clauses that are (a demand of) a project rule the task carries or states."""
    rules = [norm_words(r) for r in _standing_rules(task)]
    return {c.id for c in clauses if (w := norm_words(c.text)) and any(w in r for r in rules)}


def restates_task(check: Check, task: str) -> bool:
    """Whether a check only restates what the task says (then it is the task's word).

    Every literal input of the call appears in the task, and so does the expected value (or
    the exception): "bad codes such as 'x9' raise ValueError" restated as
    ``parse_code('x9') raises ValueError`` is the task's own check, whoever wrote it.
    """
    try:
        tree = ast.parse(check.call)
    except (SyntaxError, ValueError):
        return False
    literals = [
        ast.get_source_segment(check.call, n) or ""
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value is not None and not isinstance(n.value, bool)
    ]
    if not literals:
        return False
    if len(tree.body) != 1:
        return any(_restates(check, literals, text) for text, _ in split_clauses(task))
    if check.raises:
        return _restates(check, literals, task)
    # A value: one clause states the call and its result. Literals gathered from all over the
    # task make claims it never states: "Queue(3).pop() == 'x'" from an example's "limit 3,
    # after push('x'), …" (the pushes dropped), "trim(text, 3) == …" from an example given
    # without the 3.
    called = _called(tree)
    return any(
        _restates(check, literals, text) and all(_names(n, text) for n in called)
        for text, _ in split_clauses(task)
    )


def _called(tree: ast.AST) -> list[str]:
    """The functions, classes and methods a check calls (``C(2).get('a')``: C and get)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
    return names


def _names(name: str, text: str) -> bool:
    """Whether `text` writes `name` as a word."""
    return re.search(rf"(?<!\w){re.escape(name)}\b", text) is not None


def _restates(check: Check, literals: Sequence[str], text: str) -> bool:
    """Every literal of the check and its result or exception appear in `text`.

    A scenario (setup lines, then the expression) must restate one clause: the worked example
    "after push('a') and push('b'), pop() returns 'b'" written as a sequence of calls; its
    result must be a literal that is not a bare True/False/None.
    """
    if not all(_in_task(lit, text) for lit in literals):
        return False
    if check.raises:
        return check.raises.split(".")[-1] in text
    expect = check.expect.strip()
    if not expect or not _in_task(expect, text):
        return False
    if "\n" in check.call.strip():
        try:
            value = ast.literal_eval(expect)
        except (SyntaxError, ValueError):
            return False
        return value is not None and not isinstance(value, bool)
    return True


def _in_task(literal: str, task: str) -> bool:
    if literal in task:
        return True
    if literal[:1] in "'\"":  # 'x' written as "x" or `x`
        inner = literal[1:-1]
        return any(f"{q}{inner}{q}" in task for q in ("'", '"', "`"))
    return False


@dataclass
class Coverage:
    """Which clauses an executed report verified, which failed, which no check covers."""

    verified: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    rules: dict[str, list[str]] = field(default_factory=dict)
    """Per clause id, the rules that read its checks from the task (clauses with none left out)."""
    of: str = ""
    """What code the checks ran on, when not the committed steps (the plain answer handed back)."""

    @property
    def total(self) -> int:
        """How many clauses the task has."""
        return len(self.verified) + len(self.failed) + len(self.unchecked) + len(self.not_run)

    def summary(self) -> str:
        """``13 clauses: 11 verified, 2 unchecked ("…", "…")``."""
        if not self.total:
            return ""
        parts = [f"{len(self.verified)} verified"]
        for label, ids in (("failed", self.failed), ("not run", self.not_run),
                           ("unchecked", self.unchecked)):  # fmt: skip
            if ids:
                shown = "; ".join(_short(self.texts.get(i, i)) for i in ids[:4])
                more = f"; +{len(ids) - 4} more" if len(ids) > 4 else ""
                parts.append(f"{len(ids)} {label} ({shown}{more})")
        on = f" (on {self.of})" if self.of else ""
        plural = "s" if self.total != 1 else ""
        return f"{self.total} clause{plural}{on}: " + ", ".join(parts)

    def to_dict(self) -> dict[str, str | list[str] | dict[str, list[str]]]:
        """For run.json and plan.json: the clause ids by status, and which rules fired on each."""
        return {
            "verified": self.verified,
            "failed": self.failed,
            "unchecked": self.unchecked,
            "not_run": self.not_run,
            "rules": self.rules,
            **({"of": self.of} if self.of else {}),
        }


def _short(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text[:60]}…"' if len(text) > 60 else f'"{text}"'


SIGNATURE_PASSED = "passed (signature)"
"""The status a passing signature check of a clause is reported under (:func:`coverage`)."""


def coverage(clauses: Iterable[Clause], results: Mapping[str, Sequence[str]]) -> Coverage:
    """Each clause's status from `results` (clause id → statuses of its executed checks).

    A clause is verified when a check of it passed and none failed; failed when one failed;
    not run when it has checks none of which ran (its step was not committed); unchecked when
    it has no check at all. A passing signature check (``SIGNATURE_PASSED``) verifies only a
    clause that states nothing beyond the signature ("Stack() takes no arguments"):
    "gaps(start, end) returns the stretches no event covers …" is unchecked until something
    executes what it computes.
    """
    out = Coverage()
    for clause in clauses:
        out.texts[clause.id] = clause.text
        if clause.rules:
            out.rules[clause.id] = list(clause.rules)
        statuses = list(results.get(clause.id, []))
        if any(s in ("failed", "error", "timeout") for s in statuses):
            out.failed.append(clause.id)
        elif "passed" in statuses:
            out.verified.append(clause.id)
        elif SIGNATURE_PASSED in statuses:
            (out.unchecked if states_behaviour(clause.text) else out.verified).append(clause.id)
        elif clause.checks or statuses:
            out.not_run.append(clause.id)
        else:
            out.unchecked.append(clause.id)
    return out


_SIGNATURE_CALL = re.compile(r"\b[A-Za-z_][\w.]*\s*\(")


def states_behaviour(text: str) -> bool:
    """Whether a clause says more than a signature: five or more words besides its calls.

    Each ``name(…)`` and a ``-> type`` after it are taken out first.
    """
    rest, at = "", 0
    for match in _SIGNATURE_CALL.finditer(text):
        if match.start() < at:
            continue
        close = closing_paren(text, match.end() - 1)
        if close is None:
            break
        rest += text[at : match.start()]
        at = close + 1
        arrow = re.match(r"\s*->\s*[\w\[\], .|]*?(?=\s+[a-z]{3,}\b|[;:.]?\s*$)", text[at:])
        if arrow:
            at += arrow.end()
    rest += text[at:]
    return len(re.findall(r"[A-Za-z]{2,}", rest)) >= 5
