"""A project's standing rules as checks: the shapes a rule states, executed on every function.

A standing rule is a clause of every later task (:mod:`atom_agent.memory.rules`). Where what it
says is a shape code can execute without knowing the task (parameters with defaults are
keyword-only; parameters and results carry type annotations; every function has a docstring, one
with a section, one that names each parameter, or one whose doctest examples pass; the module
defines an exception class of a stated base; the module never uses a named call or module, as in
"never call `eval`" or "use logging instead of print"), this module builds that check for each
function the step defines, so a candidate that breaks a rule loses to one that keeps it. Where
the rule is about calls (a negative value of a named parameter raises an exception; several
values come back as a tuple, not a list; the arguments are left unchanged; an error's message
starts with the argument's name), the check calls each function the task states with a valid
call (its worked example, else plain values of the stated types) changed as the rule says. A
rule it cannot read stays a clause the prompts carry, unchecked.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from atom_agent.state import Check

RULE_CRITERION = "the project's standing rules hold"

_KW_ONLY = re.compile(
    r"\b(?:optional|default(?:ed)?|defaulted)\b[^.;]{0,60}\bkeyword[- ]only\b|"
    r"\bkeyword[- ]only\b[^.;]{0,60}\b(?:optional|default(?:s|ed)?)\b",
    re.IGNORECASE,
)
_ANNOTATED = re.compile(
    r"\btype[- ]?(?:annotat\w*|hint(?:s|ed)?)\b|\b(?:annotat\w*|hints?)\b[^.;]{0,60}\btypes?\b|"
    r"\bfully\s+annotated\b",
    re.IGNORECASE,
)
_PARAMS_ONLY = re.compile(r"\b(?:param(?:eter)?s?|arguments?)\b", re.IGNORECASE)
_RESULTS = re.compile(r"\breturns?\b|\bresults?\b|\bfully\b", re.IGNORECASE)
_DOCTEST = re.compile(r"\bdoctests?\b|>>>", re.IGNORECASE)
_DOCSTRING = re.compile(r"\bdocstrings?\b", re.IGNORECASE)
_HAS_DOCSTRING = re.compile(
    r"\b(?:ha(?:s|ve)|carr(?:y|ies)|includes?|gets?|needs?|with|requires?|contains?|writes?|"
    r"adds?|gives?)\s+(?:an?\s+|its\s+|their\s+)?(?:own\s+|short\s+|proper\s+)?docstrings?\b|"
    r"\bdocstrings?\s+(?:on|for|in|to)\s+(?:every|all|each|any)\b|\bdocumented\b",
    re.IGNORECASE,
)
_WAIVED = re.compile(
    r"^[^.;,]{0,30}\b(?:(?:is|are)\s+)?(?:not|no longer|never)\s+(?:required|needed|necessary|"
    r"mandatory|expected|wanted)\b|^[^.;,]{0,20}\b(?:optional|unnecessary)\b",
    re.IGNORECASE,
)
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


@dataclass(frozen=True)
class Signature:
    """A function the task states: its parameters, their annotations, a valid call's arguments."""

    name: str
    params: tuple[str, ...]
    annotations: tuple[str, ...]
    defaults: tuple[str | None, ...]
    example: tuple[str, ...] = ()
    """The positional arguments of the task's first worked example of it (a valid call)."""
    returns: str = ""
    """The stated return annotation ('' when none is stated)."""

    def call(self, **changed: str) -> str | None:
        """``name(p=v, …)``: a valid call with `changed` arguments; None without safe values."""
        args: dict[str, str | None] = dict(zip(self.params, self.example, strict=False))
        for p, ann, default in zip(self.params, self.annotations, self.defaults, strict=True):
            if p not in args:
                args[p] = default if default is not None else _value(ann, p)
        args.update(changed)
        if any(v is None for v in args.values()):
            return None
        return f"{self.name}({', '.join(f'{p}={args[p]}' for p in self.params)})"


def standing_checks(
    rule: str, functions: Sequence[str], signatures: Mapping[str, Signature] | None = None
) -> list[Check]:
    """The checks `rule` states over the step's `functions` (none when it states no shape)."""
    if _withdrawn(rule):
        return []
    checks: list[Check] = []
    for name in functions:
        checks += _function_checks(rule, name)
        sig = (signatures or {}).get(name)
        if sig is not None:
            checks += _call_checks(rule, sig)
    if functions:
        checks += _forbidden_checks(rule, functions[0])
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
    annotated = _ANNOTATED.search(rule)
    if annotated and _asks_for(rule, annotated):
        checks.append(_annotations_check(rule, name))
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
    elif (
        not _DOCTEST.search(rule) and (has := _HAS_DOCSTRING.search(rule)) and _asks_for(rule, has)
    ):
        checks.append(_check(f"import inspect\nbool((inspect.getdoc({name}) or '').strip())",
                             "True"))  # fmt: skip
    return checks


# A rule that forbids a piece of code: "never call `eval`", "no print statements", "don't
# import random", "use logging instead of print", "`os.system` is banned".
_NAME = r"(?P<tick>`)?(?P<x>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?P<call>\(\))?`?"
_ENDS = (
    r"(?:\s+(?:statements?|calls?|functions?|module|builtin))?(?=\s*(?:[.,;:)!]|$)|\s+(?:and|or|"
    r"anywhere|anything|ever|at\s+all|in|inside|within|on|for|from|to|when|unless|except)\b)"
)
_FORBIDS = (
    re.compile(
        r"\b(?:never|don't|do\s+not|must\s+not|should\s+not|shouldn't|no|avoid|without)\s+"
        r"(?:(?P<verb>use|call|using|calling|import|importing)\s+)?(?:the\s+)?" + _NAME + _ENDS,
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:instead\s+of|rather\s+than)\s+(?:(?P<verb>using|calling|importing)\s+)?"
        r"(?:the\s+)?" + _NAME + _ENDS,
        re.IGNORECASE,
    ),
    re.compile(
        _NAME + r"(?:\s+(?:calls?|statements?|module))?\s+(?:is|are)\s+(?:forbidden|banned|"
        r"prohibited|not\s+allowed|off[- ]limits)\b",
        re.IGNORECASE,
    ),
)
# Bare words that name a call a project forbids (not types: "a tuple, not a list" is a shape).
_FORBIDDEN_CALLS = frozenset({"print", "eval", "exec", "input", "breakpoint", "compile"})


def _forbidden(rule: str) -> list[str]:
    """The calls or modules `rule` forbids, when it names them as code.

    Code is a name in backticks or with ``()``, a dotted name under a standard-library module
    (``os.path``, ``time.sleep``), a module after "import", or a call a project may forbid
    (``print``, ``eval``); any other word ("never use global state") names no code and gives no
    check, so no rule is called verified by a check that does not test it.
    """
    names: list[str] = []
    for pattern in _FORBIDS:
        for m in pattern.finditer(rule):
            x, verb = m["x"], (m.groupdict().get("verb") or "").lower()
            head = x.split(".")[0]
            code = (
                bool(m["tick"] or m["call"])
                or ("." in x and head in sys.stdlib_module_names)
                or (verb.startswith("import") and x in sys.stdlib_module_names)
                or x in _FORBIDDEN_CALLS
            )
            if code and x not in names:
                names.append(x)
    return names


def _forbidden_checks(rule: str, name: str) -> list[Check]:
    """One check over the module that defines `name`: it uses none of the forbidden names."""
    names = _forbidden(rule)
    if not names:
        return []
    return [_check(
        f"import ast, inspect\n_used = set()\n"
        f"for _n in ast.walk(ast.parse(inspect.getsource(inspect.getmodule({name})))):\n"
        f"    if isinstance(_n, (ast.Name, ast.Attribute)):\n"
        f"        _used.add(ast.unparse(_n))\n"
        f"    elif isinstance(_n, ast.Import):\n"
        f"        _used |= {{a.name for a in _n.names}}\n"
        f"    elif isinstance(_n, ast.ImportFrom) and _n.module:\n"
        f"        _used |= {{_n.module}} | {{_n.module + '.' + a.name for a in _n.names}}\n"
        f"sorted(u for u in _used for x in {names!r} if u == x or u.startswith(x + '.'))",
        "[]",
    )]  # fmt: skip


def _asks_for(rule: str, word: re.Match[str]) -> bool:
    """Whether `rule` asks for what `word` states (not "no docstrings", "hints are optional")."""
    before, after = rule[: word.start()], rule[word.end() :]
    return not (
        _NEGATED.search(before) or re.search(r"\bno\s+$", before, re.I) or _WAIVED.search(after)
    )


def _annotations_check(rule: str, name: str) -> Check:
    """Every parameter of `name` annotated, and its result unless the rule names only parameters.

    ``self``/``cls`` and a rule that names parameters but not results ask for no return
    annotation; the check reads ``inspect.signature``, so string annotations count.
    """
    results = bool(_RESULTS.search(rule)) or not _PARAMS_ONLY.search(rule)
    returns = f"inspect.signature({name}).return_annotation is not inspect.Signature.empty"
    return _check(
        f"import inspect\n([p.name for p in inspect.signature({name}).parameters.values() "
        f"if p.annotation is p.empty and p.name not in ('self', 'cls')], "
        f"{returns if results else 'True'})",
        "([], True)",
    )


def _check(call: str, expect: str = "", raises: str = "") -> Check:
    return Check(call=call, expect=expect, raises=raises, criterion=RULE_CRITERION, origin="task")


_NEGATIVE = re.compile(
    r"\b(?:an?|any|the)\s+(?:negative\s+(?P<p1>[a-z_]\w*)|(?P<p2>[a-z_]\w*)\s+"
    r"(?:argument|parameter|value)?\s*(?:that|which)\s+is\s+(?:negative|below\s+(?:zero|0)|"
    r"less\s+than\s+(?:zero|0)))\b[^.;]*?\b(?:raises?|throws?|must\s+raise)\s+"
    r"(?:an?\s+)?(?P<exc>[A-Z]\w*(?:Error|Exception))",
)
_TUPLE = re.compile(r"\breturns?\b[^.;]{0,80}\b(?:as\s+)?an?\s+tuple\b", re.IGNORECASE)
_UNCHANGED = re.compile(
    r"\b(?:never|not|don't|do\s+not|must\s+not|no\s+function)\s+(?:\w+\s+)?"
    r"(?:modif(?:y|ies)|mutates?|changes?|alters?)\b[^.;]{0,60}\b(?:lists?|dicts?|"
    r"dictionar(?:y|ies)|arguments?|inputs?|parameters?|sets?)\b",
    re.IGNORECASE,
)
MESSAGE_NAMES_ARGUMENT = re.compile(
    r"\bmessage\b[^.;]{0,30}\b(?:starts?|begins?)\s+with\s+(?:the\s+)?(?:name\s+of\s+the\s+)?"
    r"(?:argument|parameter)(?:'s|s')?(?:\s+name)?",
    re.IGNORECASE,
)


def _call_checks(rule: str, sig: Signature) -> list[Check]:
    checks: list[Check] = []
    for m in _NEGATIVE.finditer(rule):
        word = (m["p1"] or m["p2"]).lower()
        for param in sig.params:
            if param == word or param.rstrip("s") == word.rstrip("s"):
                call = sig.call(**{param: "-1"})
                if call is not None:
                    checks.append(_check(call, raises=m["exc"]))
    plain = sig.call()
    if plain is None:
        return checks
    if _TUPLE.search(rule) and not sig.returns.replace(" ", "").lower().startswith("list"):
        checks.append(_check(f"isinstance({plain}, list)", "False"))
    if _UNCHANGED.search(rule):
        args = plain[len(sig.name) + 1 : -1]
        checks.append(_check(
            f"import copy\n_args = dict({args})\n_before = copy.deepcopy(_args)\ntry:\n"
            f"    {sig.name}(**_args)\nexcept Exception:\n    pass\n_args == _before",
            "True",
        ))  # fmt: skip
    return checks


def message_check(check: Check, sig: Signature) -> Check | None:
    """For a check that a call raises, one that its message starts with the changed argument.

    The argument is the one whose value differs from a valid call's; None when that is not
    exactly one argument.
    """
    if not check.raises:
        return None
    try:
        node = ast.parse(check.call.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return None
    given = {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
    valid = sig.call()
    if node.func.id != sig.name or valid is None or set(given) != set(sig.params):
        return None
    base = {k.arg: ast.unparse(k.value) for k in ast.parse(valid, mode="eval").body.keywords}  # type: ignore[attr-defined]
    changed = [p for p in sig.params if given[p] != base.get(p)]
    if len(changed) != 1:
        return None
    return _check(
        f"_message = None\ntry:\n    {check.call.strip()}\nexcept {check.raises} as _exc:\n"
        f"    _message = str(_exc)\n_message is not None and "
        f"_message.strip().strip('\\'\"').startswith({changed[0]!r})",
        "True",
    )


def _value(annotation: str, param: str) -> str | None:
    """A plain valid value of `annotation` (None: no safe value)."""
    ann = annotation.replace(" ", "")
    plain = {"int": "3", "float": "2.5", "str": "'a'", "bool": "False", "list": "[1, 2, 3]",
             "dict": "{'a': 5}", "tuple": "(1, 2)", "set": "{1, 2}"}  # fmt: skip
    if ann in plain:
        return plain[ann]
    if "|None" in ann or ann.startswith("Optional["):
        return "None"
    inner = re.fullmatch(r"(?:list|List|Sequence|tuple|set)\[(\w+)(?:,\.\.\.)?\]", ann)
    if inner and inner[1] in ("int", "float", "str"):
        one, two = (_value(inner[1], param), _value(inner[1], param))
        kind = ann.split("[")[0].lower()
        items = f"{one}, {two}"
        return {"tuple": f"({items})", "set": f"{{{items}}}"}.get(kind, f"[{items}]")
    mapping = re.fullmatch(r"(?:dict|Dict|Mapping)\[(\w+),(\w+)\]", ann)
    if mapping and mapping[1] == "str" and mapping[2] in ("int", "float", "str"):
        return f"{{'a': {_value(mapping[2], param)}}}"
    return None
