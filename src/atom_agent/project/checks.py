"""Executable checks of a change to a project: the target's docstring examples and the task's.

A docstring example (``>>> underscore("DeviceType")`` / ``'device_type'``) is the project's own
statement of what the target does: it becomes a check run in the target module's namespace,
earlier example lines without output becoming its setup. A check must be able to fail for
the right reason: :func:`runnable_on_baseline` drops checks that cannot even run against the
project as it is (a name no module defines, an import the sandbox lacks), and keeps those
that fail because the target is not written yet.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import re

from atom_agent.checks.contract import ContractReport
from atom_agent.state import Check

MAX_DOC_CHECKS = 12
"""Docstring examples kept per target (the first ones: docstrings order them simple first)."""

_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_UNRUNNABLE = ("NameError", "ImportError", "ModuleNotFoundError", "SyntaxError")


def _expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def docstring_checks(doc: str, *, origin: str = "docstring") -> list[Check]:
    """The examples of `doc` as checks (``call`` with its setup lines, ``expect`` or ``raises``).

    Outputs that are not Python values (``<object at …>``, ellipses, printed text) and
    examples after a line that failed to parse are left out: code cannot compare them.
    """
    try:
        examples = doctest.DocTestParser().get_examples(doc)
    except ValueError:
        return []
    checks: list[Check] = []
    setup: list[str] = []
    for example in examples:
        if example.options.get(doctest.SKIP):
            continue  # the docstring says not to run it
        try:  # comments and doctest directives go; the code stays
            source = ast.unparse(ast.parse(example.source))
        except SyntaxError:
            break  # later examples may depend on this one
        want = example.want.strip()
        if not want:
            setup.append(source)
            continue
        if "\n" in source or not _expression(source) or source.startswith("print("):
            continue  # statements, and printed text (not a value)
        call = "\n".join([*setup, source])
        if want.startswith("Traceback"):
            last = want.splitlines()[-1].strip()
            match = _EXCEPTION.match(last)
            name = match.group(1).split(".")[-1] if match else ""
            if _exception_name(name):
                checks.append(Check(call=call, raises=name, criterion=f"docstring: {source}",
                                    origin="task"))  # fmt: skip
            continue
        if "..." in want or "\n" in want or not _expression(want) or want.startswith("<"):
            continue
        checks.append(
            Check(call=call, expect=want, criterion=f"{origin}: {source} -> {want}", origin="task")
        )
        if len(checks) >= MAX_DOC_CHECKS:
            break
    return checks


def _exception_name(name: str) -> bool:
    """A builtin exception's name, or one that reads like an exception class."""
    known = getattr(builtins, name, None)
    if isinstance(known, type) and issubclass(known, BaseException):
        return True
    return name.endswith(("Error", "Exception", "Warning"))


def runnable_on_baseline(checks: list[Check], baseline: ContractReport) -> list[Check]:
    """The checks that ran against the unchanged project without a name or import error."""
    kept: list[Check] = []
    for check, result in zip(checks, baseline.results, strict=True):
        if result.status == "invalid":
            continue
        if result.status == "error" and any(n in result.reason for n in _UNRUNNABLE):
            continue
        kept.append(check)
    return kept
