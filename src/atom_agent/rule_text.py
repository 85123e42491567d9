"""A project's standing rules as text: found in what its user says, carried in a run's task text.

A sentence is a standing rule when its scope reaches beyond the task at hand: in time (it holds
for later work), over the project (its code, its functions in general), by habit (what the team
always does, whenever it writes code), or under a heading that names what follows as rules. A
sentence that asks for this task's own code (an imperative to write, a signature to define) is
the task's requirement, never a rule, unless it says it holds for later work too. Storage,
supersession and the budget of the carried block live in :mod:`atom_agent.memory.rules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_RULE_CHARS = 2000
"""Longest rule kept (the memory content limit)."""

RULES_HEADER = (
    "Standing rules of this project, stated by its user before this task (they hold here too):"
)
"""The line that opens the rules block of a run's task text (:func:`with_rules`)."""

# --- what makes a sentence a standing rule ------------------------------------------------------

_CODE_UNIT = (
    r"(?:functions?|methods?|class(?:es)?|modules?|files?|endpoints?|apis?|tests?|"
    r"parameters?|arguments?|docstrings?|errors?|exceptions?|names?|identifiers?|code)"
)
# Scope in time: the statement holds for later work, not only for this task.
_LATER = r"(?:later|future|subsequent|following|coming|upcoming|next)"
_WORK = r"(?:tasks?|work|changes?|functions?|code|ones?|requests?|jobs?|features?)"
_LASTING = re.compile(
    r"\b(?:from now on|going forward|hence ?forth|from here on|here ?after|in (?:the )?future|"
    r"from this (?:point|task|moment) on(?:wards?)?|until (?:further notice|(?:i|we) say "
    rf"otherwise)|(?:in|for|to|on|across) (?:all |every |any |each )?{_LATER} {_WORK}|"
    rf"(?:every|all|any|each) {_LATER} {_WORK}|"
    r"for (?:all|any) (?:new|future) code|from (?:today|now) onwards?|always,? in this project|"
    r"for the rest of (?:this|the|our) (?:project|code ?base|repo(?:sitory)?|session|work))\b",
    re.IGNORECASE,
)
# Scope over the project: its code, or its code units in general.
_PROJECT = re.compile(
    r"\b(?:(?:this|our|the) (?:project|code ?base|repo(?:sitory)?|library|package|team|"
    r"house)(?:'s)?(?: \w+)? (?:rules?|conventions?|style|functions|methods|code)|"
    r"(?:in|across|throughout|for) (?:all of |the whole of )?(?:this|our|the)(?: whole| entire)? "
    r"(?:(?:\w+ )?project|"
    r"code ?base|repo(?:sitory)?|library|package)|project[- ]wide|house style|"
    r"(?:coding|style|naming) conventions?|standing (?:rules?|conventions?)|"
    rf"(?:every|all|each|any) (?:(?:public|private|new|exported|helper|top[- ]level) )?{_CODE_UNIT}"
    rf"(?: of (?:this|our|the) \w+(?: \w+)?)?)\b",
    re.IGNORECASE,
)
# Scope by habit: how the team does things whenever it writes code, or what its rule is.
# "We always get a timeout" reports what happens (a bug), so experience verbs are no habit.
_HABIT = re.compile(
    r"\b(?:we|the team) (?:always|never|consistently|usually|generally|prefer|avoid)\b"
    r"(?! (?:gets?|got|see|saw|hits?|reach(?:es)?|receive|end up|run into|have|had|need|want)\b)|"
    r"\b(?:our|the team's|the house) (?:conventions?|rules?|polic(?:y|ies)|standards?|practice|"
    r"preferences?|habits?) (?:is|are)\b|"
    r"\b(?:whenever|every time|each time|any ?time) (?:you|we) (?:write|add|create|define|"
    r"implement|touch|change|edit|make|build)\b",
    re.IGNORECASE,
)
# A statement about a rule stated before ("the rule about X", "what I said before"): withdrawing
# or changing it is about the project's rules, so it needs no scope words of its own.
_EARLIER_RULE = re.compile(
    r"\b(?:(?:earlier|previous|former|old|last|above) (?:rule|convention|requirement)s?|"
    r"(?:rule|convention|requirement)s? (?:about|on|from before|from earlier|(?:i|we) (?:gave|"
    r"set|had|agreed))|what (?:i|we) said (?:before|earlier|about))\b",
    re.IGNORECASE,
)
# A heading that names what follows it as rules: "Rules for every function ...:", "Conventions:".
_HEADING = re.compile(
    r"^(?P<head>[^:]{0,160}\b(?:rules?|conventions?|guidelines?|policy|policies|standards?|"
    r"style)\b[^:]{0,160}):\s*(?P<body>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
# This task's own request: an imperative to write code, or a signature to define.
_REQUEST = re.compile(
    r"^(?:(?:now|then|also|next|finally|please|and)\b,? ?)*(?:write|implement|create|build|add|"
    r"define|make(?! sure\b| certain\b| it an? (?:habit|rule|point)\b)|code|give|provide|return|"
    r"(?:fix|change|update)(?! (?:of|to|for)\b)|refactor|include)\b",
    re.IGNORECASE,
)
# The statement changes an earlier rule ...
_CHANGE = re.compile(
    r"\b(?:instead|no longer|not any ?more|any ?more|replac\w*|chang\w*|correct\w*|"
    r"amend\w*|revis\w*|overrid\w*|supersed\w*|updat\w+ (?:to|of) (?:the|this|our) (?:\w+ )?rules?|"
    r"switch\w* (?:from|over)|on second thought|^actually)\b",
    re.IGNORECASE,
)
# ... or only withdraws one, saying nothing new in its place.
_RETRACT = re.compile(
    r"\b(?:(?:is|are) no longer (?:required|needed|necessary|mandatory|wanted|a rule|expected)|"
    r"(?:is|are) (?:now )?(?:optional|not (?:required|needed|necessary|mandatory))|"
    r"no longer (?:appl(?:y|ies)|holds?|stands?|matters?)|(?:drop|withdraw|lift|remove|cancel|"
    r"retire|forget|scrap|scratch|ditch|ignore|disregard|discard)(?:s|es|ped|ed)? (?:the|that|"
    r"this|our|my) (?:\w+ )?(?:rule|requirement|convention)|(?:ignore|disregard|forget) what "
    r"(?:i|we) said|(?:don't|do not|needn't|need not) (?:\w+ ){0,3}any ?more)\b",
    re.IGNORECASE,
)
# A sentence that only says an earlier rule still holds: nothing to write.
_KEEPS = re.compile(
    r"\brules?\b[^.]{0,80}\b(?:stays?|remains?|still (?:appl(?:y|ies)|holds?|stands?)|"
    r"(?:is|are) (?:unchanged|kept|still in force))\b",
    re.IGNORECASE,
)
# Code named in a sentence: in backticks, or as a call with its arguments.
_NAMES_CODE = re.compile(r"`[^`]+`|\b[A-Za-z_][\w.]*\([^)]*\)")
_VERB = re.compile(
    r"\b(?:raises?|returns?|is|are|has|have|must|should|can(?:not)?|uses?|gives?|fails?|"
    r"never|always|takes?|accepts?)\b",
    re.IGNORECASE,
)


def _about_named_code(sentence: str) -> bool:
    """Whether the sentence's subject names one piece of code ("`f(x)` raises ...").

    Such a sentence describes that code, not how the project does things.
    """
    verb = _VERB.search(sentence)
    return bool(_NAMES_CODE.search(sentence[: verb.start()] if verb else sentence))


_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])")
_PRONOUN_START = re.compile(r"^(?:its?|their|they|this|that|these|those|which)\b", re.IGNORECASE)


@dataclass(frozen=True)
class StatedRule:
    """One rule as its user stated it."""

    text: str
    """The user's words for this one rule (a heading's scope is kept in front of its parts)."""
    changes: bool = False
    """It says it changes an earlier rule ("instead", "a change to the rules: ...")."""


@dataclass(frozen=True)
class Retraction:
    """A statement that withdraws an earlier rule and states nothing in its place."""

    text: str


Statement = StatedRule | Retraction


def sentences(text: str) -> list[str]:
    """The text's sentences (and its bullet or numbered lines), in order."""
    out: list[str] = []
    for line in re.split(r"(?:^|\n)\s*(?:[-*\u2022]|\d+[.)])\s+|\n{2,}", text):
        out += [s.strip() for s in _SENTENCE.split(line.replace("\n", " ")) if s.strip()]
    return out


def find_rules(text: str, *, every_line: bool = False) -> list[Statement]:
    """The standing rules (and withdrawals of rules) a user's text states, in order.

    Args:
        text: a task, an answer to a question, or a conventions file.
        every_line: the text is all rules (``AGENTS.md``, ``CONVENTIONS.md``): each sentence is
            one, whatever its wording, an imperative ("Write tests with pytest.") included.
    """
    found: list[Statement] = []
    for sentence in sentences(text):
        found += _statements(sentence, every_line=every_line)
    return found


def _statements(sentence: str, *, every_line: bool) -> list[Statement]:
    # An imperative to write code asks for this task's code, unless it says it holds for later
    # work too ("write a docstring for every function from now on") or stands in a file of
    # conventions, where every line says how the project works.
    asks_now = not every_line and not _LASTING.search(sentence)
    if (asks_now and _REQUEST.match(sentence)) or _KEEPS.search(sentence):
        return []
    heading = _HEADING.match(sentence)
    head, body = (heading["head"], heading["body"]) if heading else ("", sentence)
    if heading and asks_now and _REQUEST.match(body):
        return []
    scoped = (
        every_line
        or bool(heading)
        or any(p.search(sentence) for p in (_LASTING, _PROJECT, _HABIT))
        or _withdraws_or_changes_earlier(sentence)
    )
    if not scoped or (not heading and not every_line and _about_named_code(sentence)):
        return []  # a statement about one piece of code (what it does now) is no standing rule
    if _RETRACT.search(body) and not _new_content(body):
        return [Retraction(sentence)]
    parts = _parts(body)
    if len(parts) < 2:
        return [StatedRule(_clip(sentence if heading else body),
                           changes=bool(_CHANGE.search(sentence)))]  # fmt: skip
    # A sentence that asks several things is a rule per thing: a later change to one of them
    # supersedes that one alone. A heading's scope stays in front of each.
    prefix = f"{head.strip()}: " if heading else ""
    head_changes = bool(heading) and bool(_CHANGE.search(head))
    out: list[Statement] = []
    for part in parts:
        if len(part.split()) < 3:
            continue
        if _RETRACT.search(part) and not _new_content(part):
            out.append(Retraction(_clip(prefix + part)))
        else:
            changes = head_changes or bool(_CHANGE.search(part))
            out.append(StatedRule(_clip(prefix + part), changes=changes))
    return out


def _withdraws_or_changes_earlier(sentence: str) -> bool:
    """Whether the sentence withdraws or changes a rule stated before ("forget the rule about X").

    Naming an earlier rule alone is no scope: "by the rule about leap years, …" describes the
    task's own logic.
    """
    return bool(_EARLIER_RULE.search(sentence)) and bool(
        _RETRACT.search(sentence) or _CHANGE.search(sentence)
    )


def states_change(text: str) -> bool:
    """Whether a statement says it changes an earlier rule ("instead of", "no longer" ...)."""
    return bool(_CHANGE.search(text))


def _new_content(body: str) -> bool:
    """Whether a withdrawal also states what holds now ("X is no longer required; Y is")."""
    rest = _RETRACT.sub("", body)
    return bool(re.search(r"\b(?:instead|now|must|should|has|have|uses?|raises?)\b", rest, re.I))


def _parts(body: str) -> list[str]:
    """A rule's words split into what each asks: at ';' and ', and' before a new subject.

    A piece that goes on about the one before ("its message …") stays with it.
    """
    parts: list[str] = []
    for piece in re.split(r";\s+|,\s+and\s+(?=(?:an?|the|every|each|all|any|no)\b)", body):
        piece = piece.strip().rstrip(".")
        if parts and (_PRONOUN_START.match(piece) or len(piece.split()) < 3):
            parts[-1] = f"{parts[-1]}; {piece}"  # "...; its message still ..." belongs to it
        elif piece:
            parts.append(piece)
    return parts


def _clip(text: str) -> str:
    text = " ".join(text.split()).strip()
    return text if len(text) <= MAX_RULE_CHARS else text[: MAX_RULE_CHARS - 1] + "\u2026"


def norm_words(text: str) -> str:
    """Lower-case words and digits only: how two wordings of one rule are compared."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def with_rules(task: str, block: str) -> str:
    """The run's task text: the rules block (if any), a blank line, then the user's task.

    The project's rules come first, as context a request is read in (the way a repository's
    conventions file precedes the request to an agent); the task's own words end the text.
    """
    return f"{block}\n\n{task.lstrip()}" if block else task


def own_task(task: str) -> str:
    """The user's own words of a run's task text (the rules block removed)."""
    if not task.startswith(RULES_HEADER):
        return task
    _, sep, rest = task.partition("\n\n")
    return rest if sep else ""


def carried_rules(task: str) -> list[str]:
    """The rules a run's task text carries, one per line of its block."""
    if not task.startswith(RULES_HEADER):
        return []
    block = task.partition("\n\n")[0]
    return [ln[2:].strip() for ln in block.splitlines() if ln.startswith("- ")]
