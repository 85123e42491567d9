"""Executable checks of a change to a project: examples of the target, the task's, the project's.

A docstring example (``>>> word_count("to be or not")`` / ``4``) is the project's own
statement of what the target does: it becomes a check run in the target module's namespace,
earlier example lines without output becoming its setup; a printed example
(``>>> print(render_grid(rows, border="+"))`` and its lines of text) compares the text. A
check must be able to fail for the right reason: :func:`runnable_on_baseline` drops checks that
cannot even run against the project as it is (a name no module defines, an import the sandbox
lacks), and keeps those that fail because the target is not written yet.

Examples elsewhere in the project — other docstrings of the target's module, the README and
the docs — often run the target through the code that calls it. :func:`project_examples`
gathers them; :func:`reproducing` keeps those whose run on the unchanged project fails *inside
the target* (Agentless's reproduction tests, here taken from the project's own documentation
instead of written by a model): they say what the target must make true.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import re
from pathlib import Path

from atom_agent.checks.contract import CheckResult, ContractReport
from atom_agent.project._source import walk_definitions
from atom_agent.state import Check

MAX_DOC_CHECKS = 12
"""Docstring examples kept per target (the first ones: docstrings order them simple first)."""
MAX_PROJECT_EXAMPLES = 8
"""Documented examples elsewhere in the project kept per target (shortest first)."""
MAX_CANDIDATE_EXAMPLES = 300
"""Examples tried on the unchanged project to find those that reach the target (one run)."""
DOC_SUFFIXES = (".md", ".rst", ".txt")
MAX_DOC_BYTES = 300_000
"""A documentation file larger than this is not read for examples."""
MAX_DOC_FILES = 200
"""Documentation files read for examples (README first, then ``docs/`` in path order)."""
_DOC_DIRS = ("doc", "docs", "documentation")

_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
_UNRUNNABLE = ("NameError", "ImportError", "ModuleNotFoundError", "SyntaxError")


def _expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def docstring_checks(
    doc: str, *, origin: str = "docstring", limit: int = MAX_DOC_CHECKS
) -> list[Check]:
    """The examples of `doc` as checks (``call`` with its setup lines, ``expect`` or ``raises``).

    A ``print(value)`` example compares the value's text with the lines it shows (trailing
    spaces aside). Outputs that are neither a Python value nor printed text (``<object at …>``,
    ellipses) and examples after a line that failed to parse are left out: code cannot compare
    them. At most `limit` checks.
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
        printed = _printed(source)
        if printed is not None and not want.startswith("Traceback"):
            if example.options.get(doctest.ELLIPSIS) or example.options.get(
                doctest.NORMALIZE_WHITESPACE
            ):
                continue
            text = _text(example.want)
            call = "\n".join([*setup, _TEXT_OF.format(printed)])
            checks.append(Check(call=call, expect=repr(text),
                                criterion=f"{origin}: {source} prints {text[:80]!r}",
                                origin="task"))  # fmt: skip
            if len(checks) >= limit:
                break
            continue
        if "\n" in source or not _expression(source) or source.startswith("print("):
            continue  # statements, and printed text of more than one value
        call = "\n".join([*setup, source])
        if want.startswith("Traceback"):
            last = want.splitlines()[-1].strip()
            match = _EXCEPTION.match(last)
            name = match.group(1).split(".")[-1] if match else ""
            if _exception_name(name):
                checks.append(Check(call=call, raises=name, criterion=f"{origin}: {source}",
                                    origin="task"))  # fmt: skip
            continue
        if "..." in want or not _expression(want) or want.startswith("<"):
            continue
        checks.append(
            Check(call=call, expect=want, criterion=f"{origin}: {source} -> {want}", origin="task")
        )
        if len(checks) >= limit:
            break
    return checks


_TEXT_OF = "'\\n'.join(line.rstrip() for line in str({}).splitlines())"
"""A printed value as the check compares it: its text, trailing spaces of each line dropped."""


def _printed(source: str) -> str | None:
    """The one value a ``print(value)`` line prints, as source (None for anything else)."""
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id != "print" or len(node.args) != 1 or node.keywords:
        return None
    if isinstance(node.args[0], ast.Starred):
        return None
    return ast.unparse(node.args[0])


def _text(want: str) -> str:
    """Doctest's expected output as text: ``<BLANKLINE>`` is an empty line, trailing spaces go."""
    lines = [line.rstrip() for line in want.rstrip("\n").splitlines()]
    return "\n".join("" if line == "<BLANKLINE>" else line for line in lines)


def _exception_name(name: str) -> bool:
    """A builtin exception's name, or one that reads like an exception class."""
    known = getattr(builtins, name, None)
    if isinstance(known, type) and issubclass(known, BaseException):
        return True
    return name.endswith(("Error", "Exception", "Warning"))


def runnable_on_baseline(
    checks: list[Check], baseline: ContractReport, *, adds: str = ""
) -> list[Check]:
    """The checks that ran against the unchanged project without a name or import error.

    With `adds` (a definition the step adds), a check whose only error is that name missing
    is kept: it cannot run before the change, and that is the change.
    """
    kept: list[Check] = []
    for check, result in zip(checks, baseline.results, strict=True):
        if result.status == "invalid":
            continue
        unrunnable = result.status == "error" and any(n in result.reason for n in _UNRUNNABLE)
        if unrunnable and not (adds and lacks(result.reason, adds)):
            continue
        kept.append(check)
    return kept


def lacks(reason: str, name: str) -> bool:
    """Whether an error says `name` (``Class.method``: its last part) is not there."""
    attr = re.escape(name.rpartition(".")[2])
    return bool(
        re.search(rf"name '{attr}' is not defined|cannot import name '{attr}'", reason)
        or re.search(rf"AttributeError: .*has no attribute '{attr}'", reason)
    )


def missing(checks: list[Check], baseline: ContractReport, name: str) -> list[Check]:
    """The checks whose run on the unchanged project stopped at `name` not being defined."""
    return [
        check
        for check, result in zip(checks, baseline.results, strict=True)
        if result.status == "error" and lacks(result.reason, name)
    ]


def project_examples(root: Path, path: str, qualname: str) -> list[Check]:
    """Documented examples of the project other than the target's own docstring, as checks.

    From the docstrings of the module at `path` (the checks run in its namespace) and from
    the README and documentation files (``README*``, ``doc*/**/*.md|rst|txt``), which import
    what they use; each check's criterion names where it was found. At most
    :data:`MAX_CANDIDATE_EXAMPLES`; which of them concern the target only running tells
    (:func:`reproducing`).
    """
    checks: list[Check] = []
    module = root / path
    try:
        tree = ast.parse(module.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        tree = None
    if tree is not None:
        documented = [(tree, ""), *((n, q) for n, q, _ in walk_definitions(tree.body))]
        for node, owner in documented:
            if owner == qualname:
                continue  # the target's own examples are the docstring checks
            doc = ast.get_docstring(node)
            if doc and ">>>" in doc:
                name = owner or "module"
                checks += docstring_checks(
                    doc, origin=f"{path}, docstring of {name}", limit=MAX_CANDIDATE_EXAMPLES
                )
    for doc_file in _doc_files(root):
        if len(checks) >= 2 * MAX_CANDIDATE_EXAMPLES:
            break  # enough to choose from (duplicates go below)
        text = doc_file.read_text(encoding="utf-8", errors="replace")
        if ">>>" in text:
            where = str(doc_file.relative_to(root))
            checks += docstring_checks(text, origin=where, limit=MAX_CANDIDATE_EXAMPLES)
    unique = list({c.describe(): c for c in checks}.values())
    return unique[:MAX_CANDIDATE_EXAMPLES]


def _doc_files(root: Path) -> list[Path]:
    """The README files at the top, then the documentation under ``doc``/``docs``, sorted."""
    readmes = sorted(p for p in root.glob("README*") if _readable(p))
    found: list[Path] = []
    for folder in _DOC_DIRS:
        base = root / folder
        if not base.is_dir() or base.is_symlink():
            continue
        for p in base.rglob("*"):
            if p.suffix in DOC_SUFFIXES and _readable(p):
                found.append(p)
            if len(found) >= 10 * MAX_DOC_FILES:
                break  # a generated tree of thousands of pages: enough to choose from
    return [*readmes, *sorted(set(found))][:MAX_DOC_FILES]


def _readable(path: Path) -> bool:
    """A regular file (no symlink, no device) small enough to read for examples."""
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_DOC_BYTES
    except OSError:
        return False


def reproducing(checks: list[Check], baseline: ContractReport, qualname: str) -> list[Check]:
    """The checks whose run on the unchanged project raised inside the target, shortest first.

    The target is a stub or wrong: an example that fails there is one the change must make
    pass. Examples that pass already, or fail elsewhere, say nothing about the target.
    """
    kept = reached(checks, baseline, qualname)
    kept.sort(key=lambda c: len(c.call) + len(c.expect))
    return kept[:MAX_PROJECT_EXAMPLES]


def reached(checks: list[Check], baseline: ContractReport, qualname: str) -> list[Check]:
    """The checks whose run on the unchanged project raised inside the target, in order."""
    return [
        check
        for check, result in zip(checks, baseline.results, strict=True)
        if result.status in ("error", "timeout") and inside(result.function, qualname)
    ]


def inside(function: str, qualname: str) -> bool:
    """Whether a traceback's innermost frame (``Class.method``, ``f.<locals>.g``) is the target."""
    if not function:
        return False
    return function == qualname or function.startswith(qualname + ".<locals>")


_UNMUTATED = re.compile(
    r"\b(?:never|not|without) (?:mutat|modif|chang)\w*\s+`?([A-Za-z_]\w*)`?"
    r"|\bleaves?\s+`?([A-Za-z_]\w*)`?\s+(?:unchanged|untouched|as it is)",
    re.IGNORECASE,
)
MAX_UNMUTATED_CHECKS = 3


def unmutated_checks(
    clause: str, name: str, params: list[str], examples: list[Check]
) -> list[Check]:
    """'never mutates `d`': the target's own examples, the argument for `d` equal after the call.

    For each example whose last line calls `name` with a literal list, dict or set for the
    parameter the clause names (by position among `params` or by keyword), the check binds the
    literal to ``given``, makes the call and compares ``given`` with the literal. The check's
    criterion is the clause.
    """
    wanted = {m.group(1) or m.group(2) for m in _UNMUTATED.finditer(clause)} & set(params)
    checks: list[Check] = []
    for example in examples:
        *setup, last = example.call.splitlines()
        try:
            node = ast.parse(last, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != name:
            continue
        bound: dict[str, ast.expr] = dict(zip(params, node.args, strict=False))
        bound |= {k.arg: k.value for k in node.keywords if k.arg}
        for param in sorted(wanted):
            value = bound.get(param)
            if not isinstance(value, ast.Dict | ast.List | ast.Set):
                continue
            literal = ast.unparse(value)
            call = ast.unparse(_with_given(node, value))
            checks.append(
                Check(
                    call="\n".join([*setup, f"given = {literal}", call, "given"]),
                    expect=literal,
                    criterion=clause,
                    origin="task",
                )
            )
    unique = list({c.describe(): c for c in checks}.values())
    return unique[:MAX_UNMUTATED_CHECKS]


def _with_given(call: ast.Call, value: ast.expr) -> ast.Call:
    """`call` with the argument node `value` replaced by the name ``given``."""
    given = ast.Name(id="given", ctx=ast.Load())
    return ast.Call(
        func=call.func,
        args=[given if a is value else a for a in call.args],
        keywords=[
            ast.keyword(arg=k.arg, value=given if k.value is value else k.value)
            for k in call.keywords
        ],
    )


def explain(result: CheckResult) -> str:
    """One failed check as the model is told it: what ran, and where the text first differs.

    A documented example is named by where it was found and what it runs (its criterion), not
    by its setup lines; a text result is compared line by line, so the first wrong line of a
    printed table is shown whole rather than cut inside a long repr.
    """
    check = result.check
    last = check.call.strip().splitlines()[-1] if check.call.strip() else ""
    origin, _, source = check.criterion.partition(": ")
    documented = bool(source) and (source.startswith(last) or source.startswith("print("))
    where = check.criterion.split(" prints ")[0].split(" -> ")[0]
    what = where if documented else check.describe()
    if result.function and result.status in ("error", "timeout"):
        called = f"{result.function}({result.arguments})" if result.arguments else result.function
        return f"- {what[:300]}: {result.reason[:300]} in {called[:300]}, {result.line[:200]}"
    try:
        want, got = ast.literal_eval(check.expect), ast.literal_eval(result.got)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return f"- {what[:300]}: {result.reason[:300]}"
    if not (isinstance(want, str) and isinstance(got, str)) or "\n" not in want + got:
        return f"- {what[:300]}: {result.reason[:300]}"
    wanted, gave = want.split("\n"), got.split("\n")
    for n, (a, b) in enumerate(zip(wanted, gave, strict=False), 1):
        if a != b:
            return f"- {what[:300]}: line {n} should be {a[:200]!r}, it is {b[:200]!r}"
    return f"- {what[:300]}: {len(wanted)} lines expected, {len(gave)} given"
