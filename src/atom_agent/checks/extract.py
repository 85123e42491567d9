"""Executable checks from the examples a task states, in the forms tasks write them.

``>>> f(x)`` doctest lines, ``f(x) ==> y`` / ``f(x) == y`` / ``f(x) -> y`` / ``f(x) returns
y`` / ``f(x) should give back y`` (:data:`ARROWS`), ``f(x) raises E``, "Input: … Output: …"
blocks, ``'a' -> 'b'`` when the task names one function, and "f raises E on … such as 'x' or
'y'". Only what parses as Python becomes a check: an example that code cannot read with
certainty is left out rather than guessed.
"""

from __future__ import annotations

import ast
import doctest
import re
import textwrap
from collections.abc import Iterator

from atom_agent.names import code_blocks, named_in_text
from atom_agent.state import Check

MAX_TASK_CHECKS = 40
TASK_CRITERION = "the examples stated in the task hold"

ARROWS = (
    ("==>", ""),
    ("=>", ""),
    ("==", ""),
    ("->", ""),
    ("→", ""),
    ("should return", ""),
    ("must return", ""),
    ("should give back", ""),
    ("should give", ""),
    ("gives back", ""),
    ("returns", ""),
    ("gives", ""),
    ("should produce", ""),
    ("produces", ""),
    ("should yield", ""),
    ("yields", ""),
    ("should evaluate to", ""),
    ("evaluates to", ""),
    ("should raise", "raise"),
    ("raises", "raise"),
)
"""What stands between a call and its result in a worked example (a longer one first)."""
_EXC = re.compile(r"([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt)|StopIteration)\b")
_INPUT_OUTPUT = re.compile(
    r"Input\s*:\s*(?P<input>[^\n]+?)\s*(?:\n\s*)?Output\s*:\s*(?P<output>[^\n]+)", re.IGNORECASE
)
_LITERAL_ARROW = re.compile(r"(?P<left>'[^'\n]*'|\"[^\"\n]*\"|-?\d[\d.]*|\[[^\]\n]*\])\s*"
                            r"(?:->|=>|==>|→)\s*(?P<right>[^\n]+)")  # fmt: skip
_SUCH_AS = re.compile(
    r"(?:(?P<name>[A-Za-z_]\w*)\s+)?(?:raises|should raise)\s+(?P<exc>[A-Z]\w*)\b"
    r"[^.\n]*?\bsuch as\s+(?P<items>[^\n]+)"
)
_ASSIGNED = re.compile(r"^\s*[A-Za-z_]\w*\s*=(?!=)\s*(.+)$", re.DOTALL)


def task_checks(text: str, *, names: list[str] | None = None) -> list[Check]:
    """The checks the examples of `text` state (deduplicated, at most MAX_TASK_CHECKS).

    Args:
        text: the task (and step description) as written.
        names: the functions/classes the examples may call; default: those `text` names.
    """
    names = list(names) if names is not None else named_in_text(text)
    found: dict[tuple[str, str, str], Check] = {}

    def add(call: str, expect: str = "", raises: str = "") -> None:
        if not _parses(call, "exec") or (expect and not _parses(expect)):
            return
        key = (_norm(call), _norm(expect), raises)
        found.setdefault(
            key,
            Check(call=call, expect=expect, raises=raises, criterion=TASK_CRITERION, origin="task"),
        )

    for call, expect, raises in _doctests(text):
        add(call, expect, raises)
    for call, expect, raises in _call_arrows(text, names):
        add(call, expect, raises)
    functions = [n for n in names if not n[:1].isupper()]
    if len(functions) == 1:
        (only,) = functions
        for args, expect in _input_outputs(text):
            add(f"{only}({args})", expect)
        for match in _LITERAL_ARROW.finditer(text):
            left, right = match.group("left"), _expression_prefix(match.group("right"))
            start = match.start()
            if right and is_literal(left) and is_literal(right) and not in_call(text, start):
                add(f"{only}({left})", right)
    for name, exc, items in _such_as(text, functions):
        for literal in items:
            add(f"{name}({literal})", raises=exc)
    return list(found.values())[:MAX_TASK_CHECKS]


def _doctests(text: str) -> list[tuple[str, str, str]]:
    """(call, expected, exception) of ``>>>`` examples with an output; bare statements are setup."""
    out: list[tuple[str, str, str]] = []
    for examples in map(_examples_in, _doctest_sources(text)):
        out += _doctest_checks(examples)
    return out


def _doctest_sources(text: str) -> list[str]:
    """Where ``>>>`` examples may be written.

    The docstrings of code blocks (or of `text` when it is code), and the prose around them;
    a docstring's closing quotes are then never mistaken for part of an expected output.
    """
    sources: list[str] = []
    blocks = code_blocks(text)
    prose = text
    for block in [*blocks, *([] if blocks else [text])]:
        prose = prose.replace(block, "\n")
        try:
            tree = ast.parse(textwrap.dedent(block))
        except (SyntaxError, ValueError):
            sources.append(block)
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                doc = ast.get_docstring(node)
                if doc:
                    sources.append(doc)
    if blocks or not sources:
        sources.append(prose)
    return sources


def _examples_in(source: str) -> list[doctest.Example]:
    """The doctest examples of `source`; paragraph by paragraph where indentation is uneven."""
    parser = doctest.DocTestParser()
    try:
        return parser.get_examples(source)
    except ValueError:
        examples: list[doctest.Example] = []
        for chunk in re.split(r"\n\s*\n", source):
            try:
                examples += parser.get_examples(textwrap.dedent(chunk))
            except ValueError:
                continue
        return examples


def _doctest_checks(examples: list[doctest.Example]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    setup: list[str] = []
    for example in examples:
        source, want = example.source.strip(), example.want.strip()
        call = "\n".join([*setup, source])
        if example.exc_msg is not None or want.startswith("Traceback"):
            exc = _EXC.search(want.splitlines()[-1] if want else "")
            if exc:
                out.append((call, "", exc.group(1)))
        elif not want:
            setup.append(source)
        elif _parses(want):
            out.append((call, want, ""))
    return out


def _call_arrows(text: str, names: list[str]) -> list[tuple[str, str, str]]:
    """``name(args) <arrow> value`` for each name the task names."""
    out: list[tuple[str, str, str]] = []
    if not names:
        return out
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")\s*\(")
    for match in pattern.finditer(text):
        end = _closing(text, match.end() - 1)
        if end is None:
            continue
        call = text[match.start() : end + 1]
        if not _parses(call):
            continue  # a signature such as f(s: str)
        rest = text[end + 1 :]
        stripped = rest.lstrip(" \t")
        for arrow, kind in ARROWS:
            if stripped.startswith(arrow) and (arrow[-1] in "=>→" or _word_end(stripped, arrow)):
                value = stripped[len(arrow) :]
                if kind == "raise":
                    exc = _EXC.match(value.strip())
                    if exc:
                        out.append((call, "", exc.group(1)))
                else:
                    expect = _expression_prefix(value)
                    if expect and not _signature(call, arrow, expect):
                        out.append((call, expect, ""))
                break
    return out


def _input_outputs(text: str) -> list[tuple[str, str]]:
    """(arguments, expected) of "Input: … Output: …" blocks."""
    out: list[tuple[str, str]] = []
    for match in _INPUT_OUTPUT.finditer(text):
        parts = _split_top_level(match.group("input").strip().rstrip(".;"))
        args = []
        for part in parts:
            assigned = _ASSIGNED.match(part)
            args.append((assigned.group(1) if assigned else part).strip())
        joined = ", ".join(args)
        expect = _expression_prefix(match.group("output"))
        if args and expect and _parses(f"f({joined})"):
            out.append((joined, expect))
    return out


def _such_as(text: str, functions: list[str]) -> list[tuple[str, str, list[str]]]:
    """Lists of bad inputs: "f raises E on input such as 'x9' or ''" → (f, E, [...])."""
    out: list[tuple[str, str, list[str]]] = []
    for match in _SUCH_AS.finditer(text):
        name = match.group("name")
        if name not in functions:
            if len(functions) != 1:
                continue
            name = functions[0]
        items = re.split(r"\s*(?:,|\bor\b|\band\b)\s*", match.group("items").split(".")[0])
        literals = [i.strip() for i in items if i.strip() and is_literal(i.strip())]
        if literals:
            out.append((name, match.group("exc"), literals))
    return out


def _outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth after it) for each character outside string literals."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            yield i, ch, depth
        i += 1


def _expression_prefix(value: str) -> str:
    """The Python expression `value` starts with, without trailing prose ('' if none).

    Scans at bracket depth 0 outside strings and stops at a comma, semicolon or line end, or
    at a space followed by a word once what came before parses ("2 and f(3) == 4" → "2").
    """
    text = value.strip()
    end = len(text)
    for i, ch, depth in _outside_strings(text):
        if depth < 0 or (depth == 0 and ch in ",;\n"):
            end = i
            break
        if depth == 0 and ch == " " and text[i + 1 : i + 2].isalpha() and _parses(text[:i].strip()):
            end = i
            break
    candidate = text[:end].strip()
    while candidate and candidate[-1] in ".:" and not _parses(candidate):
        candidate = candidate[:-1].rstrip()
    if candidate.endswith(".") and _parses(candidate[:-1]):
        candidate = candidate[:-1]  # a sentence's full stop, not a float's point
    return candidate if candidate and _parses(candidate) else ""


def _closing(text: str, open_at: int) -> int | None:
    """Index of the parenthesis closing the one at `open_at` (strings respected)."""
    for i, ch, depth in _outside_strings(text, open_at):
        if ch in ")]}" and depth == 0:
            return i
        if ch == "\n" and depth > 3:
            return None
    return None


def _split_top_level(text: str) -> list[str]:
    parts, start = [], 0
    for i, ch, depth in _outside_strings(text):
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def in_call(text: str, at: int) -> bool:
    """Whether position `at` is inside the open parenthesis of a call on its line."""
    line_start = text.rfind("\n", 0, at) + 1
    depth = 0
    for i in range(at - 1, line_start - 1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            if depth == 0:
                return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")
            depth -= 1
    return False


def _signature(call: str, arrow: str, expect: str) -> bool:
    """``f(a, b) -> list``: a signature with a return annotation, not an example."""
    try:
        node = ast.parse(call, mode="eval").body
    except SyntaxError:
        return False
    bare = isinstance(node, ast.Call) and all(isinstance(a, ast.Name) for a in node.args)
    return bare and (arrow in ("->", "→") or expect in _TYPE_NAMES)


_TYPE_NAMES = frozenset({"int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes"})


def _word_end(text: str, word: str) -> bool:
    return len(text) == len(word) or not (text[len(word)].isalnum() or text[len(word)] == "_")


def _parses(source: str, mode: str = "eval") -> bool:
    if not source.strip():
        return False
    try:
        ast.parse(source, mode=mode)
    except (SyntaxError, ValueError):
        return False
    return True


def is_literal(source: str) -> bool:
    """Whether `source` is a Python literal."""
    try:
        ast.literal_eval(source)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _norm(source: str) -> str:
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return source.strip()
