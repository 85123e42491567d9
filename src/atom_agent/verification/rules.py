"""The rules that read a task's sentences into checks: one table, each row named and exemplified.

A row names a rule, the family of reader that applies it (:mod:`.conditions` for errors on a
parameter, :mod:`.outcomes` for what a call gives, :mod:`.properties` for properties,
:mod:`.clauses` for the rest), its pattern, the criterion of the check it builds, and two
sentences written for it: one it must fire on and build a check from, one it must not fire on
(``tests/unit/verification/test_rules.py`` runs both for every row). The ``gaming`` row reads
code, not prose (:mod:`atom_agent.checks.gaming`): its examples are a task and code that answers
its checks, or computes. The words a rule accepts
come from the shared vocabulary below, not from one task's phrasing: "raises", "throws",
"must fail with"; "must be", "has to be", "should be"; "gives", "returns", "yields".

Patterns hold tokens filled in when a rule is applied (:func:`fill`): ``{P}`` a parameter of a
stated signature, ``{ONE}`` one item of it (``scores`` → ``score``), ``{Q}`` another
parameter, ``{LIT}`` a literal result, ``{EXC}`` an exception, ``{FRESH}`` a state a new
object is in ("an unknown key", "there is nothing to pop"), ``{NOUN}`` the thing it does not
hold, ``{MODAL}``, ``{GIVES}`` and ``{BECOMES}`` the vocabulary's verbs. A rule of the
``condition`` or ``described`` family turns the parameter's value into one that meets the
condition (``value``); the rest build their checks in their reader. Rows of code the task
writes out (signatures, worked examples in code, types) show the syntax their reader parses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from atom_agent.checks.contract import SIGNATURE_CRITERION
from atom_agent.checks.extract import ARROWS, TASK_CRITERION
from atom_agent.checks.gaming import GAMING_CRITERION
from atom_agent.state import Check

ERROR_CRITERION = "the errors the task states are raised"
OUTCOME_CRITERION = "what the task states a call gives or raises holds"
PROPERTY_CRITERION = "the properties the task states hold over generated inputs"

Family = Literal[
    "meta", "join", "signature", "example", "error-examples", "construction",
    "subject", "condition", "described", "fresh", "given", "read-only", "unchanged", "property",
    "gaming",
]  # fmt: skip
Value = Callable[[re.Match[str], str, str, Mapping[str, str]], str | None]
"""(match, the parameter's annotation, its valid value, all valid values) → a value meeting it."""


@dataclass(frozen=True)
class Rule:
    """One way a task states something code can check, with a sentence for and against."""

    name: str
    family: Family
    pattern: str
    """The regular expression (case-insensitive) with tokens :func:`fill` replaces."""
    criterion: str
    """The criterion of the checks it builds ('' for a rule that only drops a clause)."""
    positive: str
    """A task on which the rule fires and builds a check."""
    negative: str
    """A task close to the positive one on which it does not fire."""
    value: Value | None = None
    """The value of a parameter that meets the condition (``condition``, ``described``) or
    the description (``param_empty_gives``)."""


@dataclass(frozen=True)
class Fired:
    """A check and the rules that built it (a condition with its subject or construction)."""

    rules: tuple[str, ...]
    check: Check


# --- the vocabulary ------------------------------------------------------------------------------

MODAL = r"(?:must|has to|have to|should|needs? to|is required to|are required to|shall) be"
GIVES = r"(?:gives|give|returns|return|yields|yield|produces|produce|results in|evaluates to)"
RAISING = re.compile(
    r"\brais|\bthrow|\bfail|\breject|\berror\b|\bwhen\b|\bif\b|\bunless\b|\botherwise\b", re.I
)
"""A clause stating an error (with one exception named in it)."""
BECOMES = (
    r"(?:(?:should|must|will) )?(?:becomes?|comes? out as|turns? into|gives?(?: back)?|"
    r"yields?|produces?|returns?|maps? to|(?:is|are) (?:turned|converted|mapped) (?:in)?to)"
)
EXC = r"(?P<exc>(?-i:[A-Z]\w*(?:Error|Exception)))"
LIT = (
    r"\[\]|\{\}|\(\)|''|\"\"|(?-i:True|False|None)|-?\d+(?:\.\d+)?|zero"
    r"|an empty (?:list|string|dict|tuple)"
)
LITERALS = {
    "zero": "0",
    '""': "''",
    "an empty list": "[]",
    "an empty string": "''",
    "an empty dict": "{}",
    "an empty tuple": "()",
}
"""How words for a literal read as Python."""
QUOTED = r"'[^'\n]*'|\"[^\"\n]*\"|-?\d+(?:\.\d+)?|\[[^\]\n]*\]"
"""A literal a prose example writes (a string, a number, a flat list)."""
FRESH = (
    r"an? {NOUN} (?:that )?it (?:does not|doesn't|did not|didn't) know",
    r"an? {NOUN} (?:that )?it has (?:never|not) (?:seen|stored|been given)",
    r"an? {NOUN} that (?:does not|doesn't) exist",
    r"an? (?:unknown|missing|nonexistent|non-existent|absent) {NOUN}",
    r"the {NOUN} is (?:unknown|not known|missing|absent)",
    r"an? {NOUN} with no [a-z_]+",
    r"there is nothing to [a-z_]+",
)
"""States a new object is in: it knows nothing, holds nothing (the noun names the unknown)."""
CONTINUES = (
    r"(?:otherwise|or else|else|if not|failing (?:that|this)"
    r"|if (?:either|any|this|that|these|those|the|one|a) ?(?:of )?(?:the )?"
    r"(?:conditions?|requirements?|rules?|constraints?) (?:is |are )?"
    r"(?:violated|broken|not met|unmet|fails?))\b"
)
"""How a clause carries on the one before it ("…; otherwise f raises ValueError")."""
INVERSES = (
    ("encode", "decode"), ("encrypt", "decrypt"), ("compress", "decompress"),
    ("serialize", "deserialize"), ("serialise", "deserialise"), ("dump", "load"),
    ("dumps", "loads"), ("pack", "unpack"), ("escape", "unescape"), ("quote", "unquote"),
    ("to", "from"), ("format", "parse"), ("wrap", "unwrap"), ("zip", "unzip"),
    ("marshal", "unmarshal"), ("compress", "expand"), ("encipher", "decipher"),
)  # fmt: skip
"""Verbs that undo each other: two functions named by such a pair make a round trip."""


def fill(pattern: str, **tokens: str) -> str:
    """`pattern` with its tokens replaced (the vocabulary's by default)."""
    values = {"MODAL": MODAL, "GIVES": GIVES, "EXC": EXC, "BECOMES": BECOMES, **tokens}
    for token, value in values.items():
        pattern = pattern.replace("{" + token + "}", value)
    return pattern


def literal(text: str) -> str:
    """A literal result as Python (``zero`` → ``0``)."""
    return LITERALS.get(text.lower() if text[:1].isalpha() else text, text)


# --- values that meet a condition ----------------------------------------------------------------


def _number(annotation: str, value: int) -> str | None:
    """`value` for a numeric parameter; an unannotated one is typed by the number stated."""
    return str(value) if annotation.replace(" ", "") in ("int", "float", "") else None


def _negative(annotation: str) -> str | None:
    """A negative value of a numeric parameter; -1 for an unannotated one (int or float)."""
    return {"int": "-1", "float": "-1.5", "": "-1"}.get(annotation.replace(" ", ""))


def _empty(annotation: str) -> str | None:
    """The empty value of `annotation` (None for a type without one)."""
    ann = annotation.replace(" ", "")
    if ann == "str":
        return "''"
    if re.match(r"(?:list|List|Sequence)\b", ann):
        return "[]"
    if re.match(r"(?:dict|Dict|Mapping)\b", ann):
        return "{}"
    return None


def _empty_of(kind: str, annotation: str) -> str | None:
    """The empty string or list for a parameter of that type."""
    ann = annotation.replace(" ", "")
    if kind.lower() == "string":
        return "''" if ann.startswith("str") else None
    return "[]" if ann.startswith(("list", "List", "Sequence")) else None


def _items(base: str) -> list[Any] | None:
    """The items of `base` when it is a non-empty list literal (else None)."""
    try:
        value = ast.literal_eval(base)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, list) and value else None


def _list_with(base: str, item: str) -> str | None:
    """`base` (a list literal) with its last item replaced by `item`."""
    value = _items(base)
    return None if value is None else "[" + ", ".join([*map(repr, value[:-1]), item]) + "]"


def _zeros(base: str) -> str | None:
    value = _items(base)
    return None if value is None else repr([0] * len(value))


def _plus_one(value: str) -> str | None:
    try:
        number = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return None
    return str(number + 1) if isinstance(number, int) and not isinstance(number, bool) else None


def _typed(annotation: str, value: str, *types: str) -> str | None:
    return value if annotation.replace(" ", "") in types else None


_N = r"(?P<n>-?\d+)"


# --- the table -----------------------------------------------------------------------------------

# fmt: off
RULES: tuple[Rule, ...] = (
    # A request for tests is no clause of the behaviour.
    Rule("tests_request", "meta",
         r"^\W*(?:(?:please|also|and|then)\s+)*(?:include|add|write|provide|supply|create|ship"
         r"|cover\s+(?:it|them|this|the\s+\w+|both|each\s+\w+)\s+with|with)\s+(?:[\w-]+\s+){0,3}?"
         r"tests?\b", "",
         "Write cube(n: int) -> int. Please supply unit tests as well.",
         "Write run_suite(paths: list[str]) -> int that runs the tests found under paths."),
    Rule("otherwise_clause", "join", rf"^{CONTINUES}", ERROR_CRITERION,
         "Write rate(score: int) -> str. The score has to be non-negative. If that rule is "
         "broken, rate raises ValueError.",
         "Write rate(score: int) -> str. The score has to be non-negative. Rate it by bands; "
         "strings make rate raise ValueError."),
    # Code the task writes out: signatures, worked examples, types.
    Rule("stated_signature", "signature", r"(?<![\w.])([A-Za-z_]\w*)\(",
         SIGNATURE_CRITERION,
         "Write clamp(value: float, low: float = 0.0) -> float that limits value from below.",
         "Write a function that clamps a value at zero; clamp(-2.5) gives 0.0."),
    Rule("worked_example", "example",
         r"name\(args\)\s*(?:" + "|".join(re.escape(a) for a, _ in ARROWS) + r")\s*value",
         TASK_CRITERION,
         "Write halve(n: int) -> int; halve(10) returns 5.",
         "Write halve(n: int) -> int that returns half of n, rounded down."),
    Rule("code_example", "example", r">>> name(args)\nvalue (doctests in the task's code)",
         TASK_CRITERION,
         'Complete `triple` below.\n\n```python\ndef triple(n: int) -> int:\n    """Three '
         'times n.\n\n    >>> triple(4)\n    12\n    """\n```\n',
         'Complete `triple` below.\n\n```python\ndef triple(n: int) -> int:\n    """Three '
         'times n."""\n```\n'),
    Rule("gerund_example", "example",
         rf"\b(?P<verb>[a-z]{{3,}}ing) (?P<left>{QUOTED}) {{BECOMES}} (?P<right>{QUOTED})",
         TASK_CRITERION,
         "Write pack_bits(bits: str) -> int and unpack_bits(n: int) -> str; packing '101' "
         "should give 5.",
         "Write pack_bits(bits: str) -> int and unpack_bits(n: int) -> str; packing '101' "
         "is fast."),
    Rule("literal_becomes", "example", rf"(?P<left>{QUOTED}) {{BECOMES}} (?P<right>{QUOTED})",
         TASK_CRITERION,
         "Write shout(text: str) -> str that upper-cases text and adds a bang, so 'hey' "
         "comes out as 'HEY!'.",
         "Write shout(text: str) -> str that upper-cases text and adds a bang; 'hey' is a "
         "typical input."),
    # Errors with the inputs that raise them.
    Rule("error_with_examples", "error-examples",
         r"\b(?:such as|e\.g\.|for example|for instance|like|including|examples? include"
         r"|among them|say)\s*:?\s*", ERROR_CRITERION,
         "Write parse_hex(text: str) -> int; parse_hex raises ValueError on text like 'xyz' "
         "or '0x'.",
         "Write parse_hex(text: str) -> int; parse_hex raises ValueError on text that is not "
         "hexadecimal."),
    # Whose parameter a condition is on.
    Rule("constructor_argument", "construction",
         r"\b(?:an?|the) (?P<noun>[a-z_]+) (?:given|passed|set|fixed|supplied) (?:at|on|to|"
         r"when|during) (?:construction|the constructor|creation|initiali[sz]ation|init)\b",
         ERROR_CRITERION,
         "Write a Throttle class with allow() -> bool and a limit given at construction "
         "(ValueError if < 1).",
         "Write a Throttle class with allow() -> bool and a limit read from settings "
         "(ValueError if < 1)."),
    Rule("elided_subject", "subject",
         r"\b{P}\b(?P<between>[^();.]{0,50}?)\(\s*(?:raises\s+)?{EXC}\s+(?:if|when)\s+"
         r"(?P<cond>[^()]+?)\s*\)", ERROR_CRITERION,
         "Write a Ring class; Ring(size: int) keeps the last items, as many as the size "
         "chosen by the caller (ValueError if < 2).",
         "Write a Ring class; Ring(size: int) keeps the last items, as many as the size "
         "chosen by the caller (see the notes)."),
    # Conditions on a stated parameter: the value that meets each.
    Rule("param_empty", "condition", r"\b{P} (?:is|are) (?:an? )?empty\b|\b(?:an? )?empty {P}\b",
         ERROR_CRITERION,
         "Write initials(names: list[str]) -> str. Raise ValueError when names is empty.",
         "Write initials(names: list[str]) -> str. Raise ValueError when names holds a number.",
         lambda m, a, b, v: _empty(a)),
    Rule("param_must_be_nonempty", "condition",
         r"\b{P} {MODAL} (?:a |an )?non-?empty\b|\b{P} (?:must|should|may) not be empty\b",
         ERROR_CRITERION,
         "Write greet(name: str) -> str; name has to be non-empty, otherwise greet raises "
         "ValueError.",
         "Write greet(name: str) -> str; name has to be capitalised, otherwise greet raises "
         "ValueError.",
         lambda m, a, b, v: _empty(a)),
    Rule("param_negative", "condition",
         r"\b{P} (?:is|are) negative\b|\ba negative {P}\b|\b{P} < 0\b", ERROR_CRITERION,
         "Write isqrt(n: int) -> int. Passing a negative n raises ValueError.",
         "Write isqrt(n: int) -> int. Passing a huge n raises OverflowError.",
         lambda m, a, b, v: _negative(a)),
    Rule("item_negative", "condition",
         r"\b(?:any|an?|one|some|at least one) {ONE} is negative\b"
         r"|\b{P} (?:contains?|has|holds?|includes?) (?:a|any) negative\b", ERROR_CRITERION,
         "Write mean(values: list[int]) -> float; it raises ValueError if some value is "
         "negative.",
         "Write mean(values: list[int]) -> float; it raises ValueError if the values are "
         "unsorted.",
         lambda m, a, b, v: _list_with(b, "-1") if a.startswith(("list", "List")) else None),
    Rule("param_must_be_positive", "condition",
         r"\b{P} {MODAL} (?:a |an )?positive\b|\b{P}(?: that| which)? (?:is|are) not positive\b"
         r"|\ba non-?positive {P}\b|\b{P} <= 0\b", ERROR_CRITERION,
         "Write repeat(word: str, times: int) -> str; times has to be a positive number, else "
         "repeat raises ValueError.",
         "Write repeat(word: str, times: int) -> str; times has to be an even number, else "
         "repeat raises ValueError.",
         lambda m, a, b, v: _typed(a, "0", "int", "float", "")),
    Rule("param_must_be_nonnegative", "condition",
         r"\b{P} {MODAL} (?:a |an )?non-?negative\b|\b{P} (?:must|should|may) not be negative\b",
         ERROR_CRITERION,
         "Write pad(text: str, width: int) -> str. width should be non-negative, else pad "
         "raises ValueError.",
         "Write pad(text: str, width: int) -> str. width should be a multiple of 4, else pad "
         "raises ValueError.",
         lambda m, a, b, v: _typed(a, "-1", "int", "float", "")),
    Rule("param_range", "condition",
         rf"\b{{P}} {{MODAL}} (?:between|from|in the range) {_N} (?:and|to|up to)\b"
         rf"|\bvalues? of {{P}} (?:go|goes|range|ranges|run|runs|are|is|lie|lies) "
         r"(?:from|between) (?P<n2>-?\d+)\b", ERROR_CRITERION,
         "Write percent(share: int) -> str; share should be from 1 to 99, and anything else "
         "raises ValueError.",
         "Write percent(share: int) -> str; share should be a whole number, and anything else "
         "raises ValueError.",
         lambda m, a, b, v: _number(a, int(m["n"] or m["n2"]) - 1)),
    Rule("all_items_zero", "condition",
         r"\ball {P} are (?:0|zero)\b|\bevery {ONE} is (?:0|zero)\b|\b{P} are all (?:0|zero)\b",
         ERROR_CRITERION,
         "Write normalise(scores: list[int]) -> list[float]; normalise raises "
         "ZeroDivisionError when all scores are zero.",
         "Write normalise(scores: list[int]) -> list[float]; normalise raises "
         "ZeroDivisionError when the scores cancel out.",
         lambda m, a, b, v: _zeros(b)),
    Rule("param_zero", "condition", r"\b{P} (?:is|equals|==) (?:0|zero)\b", ERROR_CRITERION,
         "Write split_even(total: int, parts: int) -> list[int]; if parts is 0 it raises "
         "ZeroDivisionError.",
         "Write split_even(total: int, parts: int) -> list[int]; if parts is odd it raises "
         "ValueError.",
         lambda m, a, b, v: _typed(a, "0", "int")),
    Rule("param_below", "condition",
         rf"\b{{P}} (?:is |are )?(?:less than|smaller than|lower than|below|under|<) {_N}\b",
         ERROR_CRITERION,
         "Write chunk_text(text: str, size: int) -> list[str]; a size below 1 raises "
         "ValueError.",
         "Write chunk_text(text: str, size: int) -> list[str]; a size above the text length "
         "raises ValueError.",
         lambda m, a, b, v: _number(a, int(m["n"]) - 1)),
    Rule("param_at_least", "condition",
         rf"\b{{P}} {{MODAL}} (?:at least|no less than|>=) {_N}\b", ERROR_CRITERION,
         "Write make_grid(rows: int, cols: int) -> list[list[int]]; rows must be at least 2, "
         "or a ValueError is raised.",
         "Write make_grid(rows: int, cols: int) -> list[list[int]]; rows must be at least as "
         "many as cols, or a ValueError is raised.",
         lambda m, a, b, v: _number(a, int(m["n"]) - 1)),
    Rule("param_above", "condition",
         rf"\b{{P}} (?:is |are )?(?:greater than|more than|larger than|higher than|above|over"
         rf"|exceeds?|>) {_N}\b", ERROR_CRITERION,
         "Write roll(sides: int) -> int; sides greater than 100 raise ValueError.",
         "Write roll(sides: int) -> int; sides greater than the table allows raise ValueError.",
         lambda m, a, b, v: _number(a, int(m["n"]) + 1)),
    Rule("param_at_most", "condition",
         rf"\b{{P}} {{MODAL}} (?:at most|no more than|<=) {_N}\b", ERROR_CRITERION,
         "Write gauge(level: int) -> str; level must be at most 10 (ValueError otherwise).",
         "Write gauge(level: int) -> str; level must be at most moderate (ValueError "
         "otherwise).",
         lambda m, a, b, v: _number(a, int(m["n"]) + 1)),
    Rule("param_must_exceed", "condition",
         rf"\b{{P}} {{MODAL}} (?:greater|more|larger|higher) than {_N}\b", ERROR_CRITERION,
         "Write ladder(steps: int) -> list[int]; steps must be greater than 2, else ValueError "
         "is raised.",
         "Write ladder(steps: int) -> list[int]; steps must be greater than the floors, else "
         "ValueError is raised.",
         lambda m, a, b, v: _number(a, int(m["n"]))),
    Rule("param_not_less_than_other", "condition",
         r"\b{P} is not (?:less|smaller) than (?P<q>{Q})\b"
         r"|\b{P} (?:is )?(?:greater than or equal to|>=) (?P<q2>{Q})\b", ERROR_CRITERION,
         "Write span(low: int, high: int) -> int; span raises ValueError if low is not less "
         "than high.",
         "Write span(low: int, high: int) -> int; span raises ValueError if low is not an int.",
         lambda m, a, b, v: v.get(m["q"] or m["q2"] or "")),
    Rule("param_greater_than_other", "condition",
         r"\b{P} (?:is )?(?:greater than|larger than|later than|>) (?P<q>{Q})\b",
         ERROR_CRITERION,
         "Write window(first: int, last: int) -> list[int]; if first is greater than last, "
         "window raises ValueError.",
         "Write window(first: int, last: int) -> list[int]; if first is greater than 1000, "
         "window raises OverflowError.",
         lambda m, a, b, v: _plus_one(v.get(m["q"], ""))),
    # An input described without a parameter: the only parameter of its type gets it.
    Rule("described_empty_string", "described", r"\b(?<!non-)(?:(?:an?|the) )?empty string\b",
         ERROR_CRITERION,
         "Write word_count(text: str) -> int; an empty string raises ValueError.",
         "Write word_count(text: str) -> int; a string of spaces raises ValueError.",
         lambda m, a, b, v: "''" if a.replace(" ", "").startswith("str") else None),
    Rule("described_empty_list", "described", r"\b(?<!non-)(?:(?:an?|the) )?empty list\b",
         ERROR_CRITERION,
         "Write largest(items: list[int]) -> int. It raises ValueError for an empty list.",
         "Write largest(items: list[int]) -> int. It raises ValueError for a list of strings.",
         lambda m, a, b, v: "[]" if a.replace(" ", "").startswith("list") else None),
    Rule("described_must_be_nonempty", "described",
         r"\b(?:must|has to|have to|should|needs? to) (?:be|form|make up) an? non-?empty "
         r"(?P<kind>list|string)\b", ERROR_CRITERION,
         "Write a Deck class; Deck(cards: list[str]) holds cards, which need to be a non-empty "
         "list, or ValueError is raised.",
         "Write a Deck class; Deck(cards: list[str]) holds cards, which need to be a sorted "
         "list, or ValueError is raised.",
         lambda m, a, b, v: _empty_of(m["kind"], a)),
    # What a new object gives or raises, about something it does not hold.
    Rule("value_for_unknown", "fresh",
         r"\b(?:returns|gives|yields|is|or) (?P<lit>{LIT}) (?:when|if|for|on) {FRESH}",
         OUTCOME_CRITERION,
         "Write a Shelf class; Shelf() takes no arguments. stock(item: str) -> int returns how "
         "many of item it holds, or 0 for an item it has never seen.",
         "Write a Shelf class; Shelf() takes no arguments. stock(item: str) -> int returns how "
         "many of item it holds, or 0 for an item out of season."),
    Rule("unknown_gives_value", "fresh", r"\b{FRESH}\)? {GIVES} (?P<lit>{LIT})",
         OUTCOME_CRITERION,
         "Write a Shelf class; Shelf() takes no arguments. owners(item: str) -> list[str] lists "
         "who holds item; an unknown item gives [].",
         "Write a Shelf class; Shelf() takes no arguments. owners(item: str) -> list[str] lists "
         "who holds item; a rare item gives []."),
    Rule("unknown_raises", "fresh", r"\b{FRESH}(?: [a-z ]{0,30})? (?:raises?|throws?) {EXC}",
         OUTCOME_CRITERION,
         "Write a Shelf class; Shelf() takes no arguments. take(item: str) -> None removes one "
         "item; taking a missing item raises LookupError.",
         "Write a Shelf class; Shelf() takes no arguments. take(item: str) -> None removes one "
         "item; taking the last item raises LookupError."),
    Rule("raised_for_unknown", "fresh",
         r"(?:raises |throws )?{EXC}(?: is| will be| should be| must be)?(?: raised| thrown)? "
         r"(?:for|on|when given|if given) {FRESH}", OUTCOME_CRITERION,
         "Write a Shelf class; Shelf() takes no arguments. price(item: str) -> float returns "
         "the item's price; LookupError is thrown for an item that does not exist.",
         "Write a Shelf class; Shelf() takes no arguments. price(item: str) -> float returns "
         "the item's price; LookupError is thrown for an item with a blank name."),
    Rule("existing_or_raises", "fresh",
         r"\bfor an? (?:current|known|existing|valid|stored) (?P<noun>[a-z_]+) and (?:raises|"
         r"throws) {EXC} (?:otherwise|in (?:every|any) other case|else)", OUTCOME_CRITERION,
         "Write a Shelf class; Shelf() takes no arguments. label(item: str) -> str returns the "
         "label for a stored item and raises LookupError otherwise.",
         "Write a Shelf class; Shelf() takes no arguments. label(item: str) -> str returns the "
         "label for a stored item and raises LookupError when the label is blank."),
    # One stated value gives a stated result.
    Rule("param_value_gives", "given",
         r"\b{P} (?:of |is |= ?)?(?P<value>{LIT}) {GIVES}(?: back)? (?P<lit>{LIT})",
         OUTCOME_CRITERION,
         "Write first_words(text: str, count: int = 1) -> list[str]; a count of 0 gives back "
         "[].",
         "Write first_words(text: str, count: int = 1) -> list[str]; a count of 0 is "
         "rejected."),
    Rule("param_empty_gives", "given",
         r"\b(?:(?:given|for|on|with) )?(?:an? |the )?empty {P}\b,?(?: [a-z_]+){0,4}? {GIVES}"
         r"(?: back)? (?P<lit>{LIT})", OUTCOME_CRITERION,
         "Write initials(names: list[str]) -> str; empty names give ''.",
         "Write initials(names: list[str]) -> str; empty names give an error message.",
         lambda m, a, b, v: _empty(a)),
    Rule("empty_input_gives", "given",
         r"\b(?:(?:given|for|on|with) )?(?:an? |the )?empty (?P<word>list|string)\b,?"
         r"(?: [a-z_]+){0,4}? {GIVES}(?: back)? (?P<lit>{LIT})", OUTCOME_CRITERION,
         "Write evens(numbers: list[int]) -> list[int] that keeps the even numbers; for an "
         "empty list it returns [].",
         "Write evens(numbers: list[int]) -> list[int] that keeps the even numbers; for an "
         "empty list it prints a warning."),
    Rule("read_only_property", "read-only",
         r"\bread-only (?:property|attribute) (?:named |called )?`?(?P<a>[a-z_]\w*)`?"
         r"|\b`?(?P<b>[a-z_]\w*)`? is a read-only (?:property|attribute)", OUTCOME_CRITERION,
         "Write a Thermostat class; Thermostat(target: float = 20.0) starts at target. The "
         "reading is available as a read-only attribute called celsius.",
         "Write a Thermostat class; Thermostat(target: float = 20.0) starts at target. The "
         "reading is available as an attribute called celsius."),
    Rule("input_unchanged", "unchanged",
         r"\b(?:leaves|keeps) (?:the|its) (?:input|argument)s?(?: \w+)? (?:unchanged|intact"
         r"|unmodified)|\bdoes not (?:modify|mutate|change|alter) (?:the|its) (?:input|argument)"
         r"|\b(?:the|its) (?:input|argument)s?(?: \w+)? (?:must|should|is|are|will) (?:not|never)"
         r" (?:be )?(?:modified|mutated|changed|altered)|\bwithout (?:modifying|mutating|changing"
         r"|altering) (?:the|its) (?:input|argument)", OUTCOME_CRITERION,
         "Write rotated(cards: list[int]) -> list[int] that returns the cards moved one place "
         "left, without modifying its input. For example, rotated([1, 2]) returns [2, 1].",
         "Write rotated(cards: list[int]) -> list[int] that returns the cards moved one place "
         "left. For example, rotated([1, 2]) returns [2, 1]."),
    # Properties over generated inputs.
    Rule("round_trip_expression", "property",
         r"(?P<left>[A-Za-z_][\w.]*\([^=<>!]*\))\s*==\s*(?P<right>[A-Za-z_]\w*)\b",
         PROPERTY_CRITERION,
         "Write to_base3(n: int) -> str and from_base3(s: str) -> int; from_base3(to_base3(n)) "
         "== n for any non-negative integer.",
         "Write to_base3(n: int) -> str and from_base3(s: str) -> int; from_base3(to_base3(n)) "
         "== n is worth a test."),
    Rule("round_trip_then", "property",
         r"\b(?P<first>[a-z]{3,})\b(?: (?:it|them|the \w+|an? \w+|its \w+))?,? (?:and )?then "
         r"(?P<second>[a-z]{3,})\b(?P<rest>[^.;]*)", PROPERTY_CRITERION,
         "Write squash(text: str) -> str and unsquash(text: str) -> str; squashing a string "
         "then unsquashing it gives back the original, for any string of lowercase letters.",
         "Write squash(text: str) -> str and unsquash(text: str) -> str; squashing a string "
         "then unsquashing it takes twice as long as copying it."),
    Rule("round_trip_named", "property", r"\bround[- ]?trip(?:s|ping)?\b", PROPERTY_CRITERION,
         "Write to_hex(n: int) -> str and from_hex(text: str) -> int, with tests covering "
         "round trips for non-negative integers.",
         "Write to_hex(n: int) -> str and from_hex(text: str) -> int, with tests covering the "
         "edge cases for non-negative integers."),
    # Code, not prose: the attempt's files read against the checks the task's examples build.
    # The positive and negative are a task, then the code after a ``# code`` line.
    Rule("answers_the_checks", "gaming",
         r"AST: a literal table keyed by the checks' inputs holding their results; a branch on a "
         r"check's exact input returning its result; a broad except returning one; reading the "
         r"tests at run time; tests that exit, skip, assert nothing or patch the checked code",
         GAMING_CRITERION,
         "Write add(a, b) that returns the sum; add(2, 3) == 5 and add(10, 7) == 17.\n# code\n"
         "def add(a, b):\n    return {(2, 3): 5, (10, 7): 17}[(a, b)]\n",
         "Write add(a, b) that returns the sum; add(2, 3) == 5 and add(10, 7) == 17.\n# code\n"
         "def add(a, b):\n    return a + b\n"),
)
# fmt: on

RESTORES = re.compile(
    r"\b(?:gives?|returns?|yields?|produces?|restores?|recovers?|brings?|reproduces?|ends? up"
    r"|is|are|equals?)\b(?: \w+){0,3}? (?:back|(?:the )?original|the same|unchanged|the input"
    r"|the data|what (?:it|you) started with)\b",
    re.IGNORECASE,
)
"""Says a round trip ends where it began ("gives back the original", "the data back")."""


def rules_of(family: Family) -> tuple[Rule, ...]:
    """The rows of one family, in table order."""
    return tuple(r for r in RULES if r.family == family)


def rule(name: str) -> Rule:
    """The row named `name`."""
    for row in RULES:
        if row.name == name:
            return row
    raise KeyError(name)


def search(name: str, text: str, **tokens: str) -> re.Match[str] | None:
    """The first match of rule `name` (tokens filled) in `text`."""
    return re.search(fill(rule(name).pattern, **tokens), text, re.IGNORECASE)


def finditer(row: Rule, text: str, **tokens: str) -> list[re.Match[str]]:
    """Every match of `row` (tokens filled) in `text`."""
    return list(re.finditer(fill(row.pattern, **tokens), text, re.IGNORECASE))


def unique(fired: list[Fired]) -> list[Fired]:
    """`fired` with a check built twice kept once, in its first place, with all its rules.

    The last build's check is kept: a later reader is the more specific (an error example
    read as such, not as a worked example).
    """
    out: dict[str, Fired] = {}
    for one in fired:
        key = one.check.describe()
        rules = (*out[key].rules, *one.rules) if key in out else one.rules
        out[key] = Fired(tuple(dict.fromkeys(rules)), one.check)
    return list(out.values())
