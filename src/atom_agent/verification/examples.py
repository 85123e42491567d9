"""Worked examples a task states in words, and errors it states with the inputs that raise them.

"'hey' comes out as 'HEY!'", "packing '101' should give 5" (the ``literal_becomes`` and
``gerund_example`` rows of :data:`~atom_agent.verification.rules.RULES`); "parse_hex raises
ValueError on text like 'xyz' or '0x'" (``error_with_examples``). Examples written as code
(``f(x) == y``, doctests) are :mod:`atom_agent.checks.extract`'s.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from atom_agent.checks.extract import TASK_CRITERION, in_call, is_literal
from atom_agent.state import Check
from atom_agent.verification.conditions import ERROR_CRITERION, Stated
from atom_agent.verification.properties import named_by, single_parameter
from atom_agent.verification.rules import Fired, finditer, rule

__all__ = ["error_examples", "prose_examples"]

_EXAMPLES_WORDS = re.compile(rule("error_with_examples").pattern, re.IGNORECASE)
_DESCRIBED_ITEMS = {"empty string": "''", "empty list": "[]"}


def prose_examples(text: str, names: Sequence[str], stated: Mapping[str, Stated]) -> list[Fired]:
    """Worked examples in words: "'hey' comes out as 'HEY!'", "packing '101' should give 5".

    The function is the one the gerund names (packing → ``pack_bits``), else the task's only
    function; it must take one argument (the others defaulted). The input is a string or a
    list literal: "limit 0 gives []" states a parameter's value, not a call.
    """
    functions = [n for n in names if not n[:1].isupper()]
    fired = []
    for row in (rule("gerund_example"), rule("literal_becomes")):
        for match in finditer(row, text):
            left, right = match["left"], match["right"]
            if left[:1] not in "'\"[" or not (is_literal(left) and is_literal(right)):
                continue
            if row.name == "gerund_example":
                target = named_by(match["verb"], functions)
            else:
                target = functions[0] if len(functions) == 1 else ""
            sig = stated.get(target)
            if not target or in_call(text, match.start()):
                continue
            if sig is not None and single_parameter(sig) is None:
                continue
            check = Check(call=f"{target}({left})", expect=right, criterion=TASK_CRITERION,
                          origin="task")  # fmt: skip
            fired.append(Fired((row.name,), check))
    return fired


def error_examples(
    text: str, names: Sequence[str], *, task: str = "", previous: str = ""
) -> list[Check]:
    """Errors a clause states with example inputs, in any phrasing ("such as", "e.g." …).

    "parse_hex raises ValueError on text like 'xyz' or '0x'" → one check per literal ("an
    empty string" is one too). The function is the one the clause names (the only one, when
    it names several it must come before the exception). A clause that only lists the inputs
    takes the exception and function from the `previous` part of its sentence ("Every bad
    code throws ValueError; examples include 'x' and ''"). Class errors are left to scenarios.
    When the `task` states the function's first parameter as a list ("f(items: list[str])"),
    an example that is not a list is one invalid item: it is passed in a list of its own.
    """
    exc = _exception(text)
    said = text
    if not exc and previous.rstrip().endswith((";", ":")):
        exc, said = _exception(previous), f"{previous} {text}"
    functions = [n for n in names if not n[:1].isupper()]
    if not exc or not functions:
        return []
    mentioned = [n for n in functions if re.search(rf"(?<![\w.]){re.escape(n)}\b", said)]
    target = mentioned[0] if len(mentioned) == 1 else (functions[0] if len(functions) == 1 else "")
    if not target:
        return []
    wrap = bool(_LIST_PARAM.search(_first_annotation(task or text, target)))
    checks = []
    for match in _EXAMPLES_WORDS.finditer(text):
        tail = text[match.end() :]
        tail = re.split(r"[.;)](?:\s|$)", tail, maxsplit=1)[0]
        for item in re.split(r"\s*(?:,|\bor\b|\band\b)\s*", tail):
            literal = item.strip().strip("`")
            described = re.sub(r"^(?:an?|the)\s+", "", literal.lower())
            literal = _DESCRIBED_ITEMS.get(described, literal)
            if literal and is_literal(literal):
                if wrap and not isinstance(ast.literal_eval(literal), list | tuple):
                    literal = f"[{literal}]"
                checks.append(
                    Check(
                        call=f"{target}({literal})",
                        raises=exc,
                        criterion=ERROR_CRITERION,
                        origin="task",
                    )
                )
    return checks


_LIST_PARAM = re.compile(r"^(?:list|List|Sequence|Iterable|tuple\[[^\]]*,\s*\.\.\.)\b")


def _first_annotation(task: str, name: str) -> str:
    """The annotation of `name`'s first parameter as the task writes it ('' if none)."""
    match = re.search(rf"(?<![\w.]){re.escape(name)}\(\s*\w+\s*:\s*([^,)=]+)", task)
    return match.group(1).strip() if match else ""


def _exception(text: str) -> str:
    """The exception a clause says is raised ('' if none)."""
    lowered = text.lower()
    if "rais" not in lowered and "error" not in lowered:
        return ""
    match = re.search(r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception))\b", text)
    return match.group(1) if match else ""
