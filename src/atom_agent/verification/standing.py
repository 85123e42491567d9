"""A project's standing rules as checks: the shapes a rule states, executed on every function.

A standing rule is a clause of every later task (:mod:`atom_agent.memory.rules`). Where what it
says is a shape code can execute without knowing the task (parameters with defaults are
keyword-only; every docstring has a section, or names each parameter, or carries doctest
examples that pass; the module defines an exception class of a stated base), this module
builds that check for each function the step defines, so a candidate that breaks a rule loses
to one that keeps it. A rule it cannot read stays a clause that the prompts carry, unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from atom_agent.state import Check

RULE_CRITERION = "the project's standing rules hold"

_KW_ONLY = re.compile(
    r"\b(?:optional|default(?:ed)?|defaulted)\b[^.;]{0,60}\bkeyword[- ]only\b|"
    r"\bkeyword[- ]only\b[^.;]{0,60}\b(?:optional|default(?:s|ed)?)\b",
    re.IGNORECASE,
)
_DOCTEST = re.compile(r"\bdoctests?\b|>>>", re.IGNORECASE)
_DOCSTRING = re.compile(r"\bdocstrings?\b", re.IGNORECASE)
_SECTION = re.compile(
    r"['\"`]?\b(?P<name>Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Examples?|"
    r"Notes?|Attributes)\b:?['\"`]?\s*(?:section|heading|block|part)?",
)
_EACH_PARAM = re.compile(
    r"\b(?:nam(?:e|es|ing)|list(?:s|ing)?|document(?:s|ing)?|describ(?:e|es|ing)|"
    r"mention(?:s|ing)?)\b[^.;]{0,40}\b(?:each|every|all)\b"
    r"[^.;]{0,20}\b(?:param(?:eter)?s?|arguments?)\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:no longer|not|never|needn't|need not)\b[^.;]{0,30}$", re.IGNORECASE)
_SUBCLASS = re.compile(
    r"\bclass\s+(?P<cls>[A-Z]\w*)\s*\(\s*(?P<base>[A-Z]\w*)\s*\)|"
    r"\b(?P<cls2>[A-Z]\w*(?:Error|Exception)),?\s+(?:a|an)\s+subclass\s+of\s+(?P<base2>[A-Z]\w*)"
)


def standing_checks(rule: str, functions: Sequence[str]) -> list[Check]:
    """The checks `rule` states over the step's `functions` (none when it states no shape)."""
    if _withdrawn(rule):
        return []
    checks: list[Check] = []
    for name in functions:
        checks += _function_checks(rule, name)
    subclass = _SUBCLASS.search(rule)
    if subclass:
        cls = subclass["cls"] or subclass["cls2"]
        base = subclass["base"] or subclass["base2"]
        checks.append(_check(f"isinstance({cls}, type) and issubclass({cls}, {base})", "True"))
    return checks


def _withdrawn(rule: str) -> bool:
    """A rule that says something is no longer required states no check."""
    return bool(re.search(r"\bno longer (?:required|needed|necessary|mandatory)\b", rule, re.I))


def _function_checks(rule: str, name: str) -> list[Check]:
    checks: list[Check] = []
    if _KW_ONLY.search(rule):
        checks.append(_check(
            f"import inspect\n[p.name for p in inspect.signature({name}).parameters.values() "
            "if p.default is not p.empty and p.kind is not p.KEYWORD_ONLY]",
            "[]",
        ))  # fmt: skip
    if not _DOCSTRING.search(rule):
        return checks
    if _DOCTEST.search(rule):
        checks.append(_check(
            f"import doctest\n_tests = [t for t in doctest.DocTestFinder().find({name}) "
            "if t.examples]\n_failed = sum(doctest.DocTestRunner().run(t, out=lambda s: None)"
            ".failed for t in _tests)\n(len(_tests) > 0, _failed)",
            "(True, 0)",
        ))  # fmt: skip
    section = next((m for m in _SECTION.finditer(rule) if not _NEGATED.search(rule[: m.start()])),
                   None)  # fmt: skip
    if section is not None:
        head = section["name"] + ":"
        each = bool(_EACH_PARAM.search(rule))
        missing = (
            f"[p for p in inspect.signature({name}).parameters if p not in "
            f"_doc.partition({head!r})[2]]"
            if each
            else "[]"
        )
        checks.append(_check(
            f"import inspect\n_doc = inspect.getdoc({name}) or ''\n({head!r} in _doc, {missing})",
            "(True, [])",
        ))  # fmt: skip
    return checks


def _check(call: str, expect: str) -> Check:
    return Check(call=call, expect=expect, criterion=RULE_CRITERION, origin="task")
