"""Code out of a model's reply: the fenced block, without its tests, completed from the task.

Pure text (no I/O, no model): it imports nothing of atom_agent but :mod:`atom_agent.names`, so
every layer may read a reply with it — drafting, contracts, the plain answer, project edits.
"""

from __future__ import annotations

import ast
import copy
import re
import sys
from collections.abc import Collection, Mapping, Sequence

from atom_agent.names import code_blocks, defined_in_code, free_names

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(reply: str, *, tests: bool = False) -> str:
    """The code of a reply: the longest fenced block that parses, else the longest block.

    A reply cut off inside its block keeps what it parses to; a reply without a fence is
    taken whole when it parses as Python. Test code after the implementation is left out
    unless `tests` (a contract is test code).
    """
    keep = (lambda source: source) if tests else without_tests
    blocks = [b for b in _FENCE.findall(reply or "") if b.strip()]
    parsing: list[str] = [b for b in blocks if _parses(b)]
    if parsing:
        return keep(max(parsing, key=len))
    if blocks:
        # A reply cut off at the token limit: keep the longest start that parses.
        longest = str(max(blocks, key=len))
        kept = _parsing_prefix(longest)
        return keep(kept) if kept else longest
    return keep(reply) if _parses(reply or "") else ""


def _parsing_prefix(source: str) -> str:
    """The longest run of `source`'s first lines that parses ('' if none does)."""
    lines = source.splitlines(keepends=True)
    for end in range(len(lines) - 1, 0, -1):
        head = "".join(lines[:end])
        if _parses(head):
            return head
    return ""


def without_tests(source: str) -> str:
    """`source` without the tests a model puts after its code.

    Top-level ``test_*`` functions, ``Test*`` classes, asserts, ``import pytest`` and an
    ``if __name__ == "__main__":`` block would run (or fail) on import of impl.py, or be
    collected as the step's tests; they are not the implementation.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    lines = source.splitlines(keepends=True)
    drop: list[tuple[int, int]] = []
    for node in tree.body:
        if _is_test(node):
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            drop.append((start, node.end_lineno or node.lineno))
    for start, end in reversed(drop):
        del lines[start - 1 : end]
    kept = "".join(lines).strip("\n").rstrip() + "\n"
    return kept if _parses(kept) and kept.strip() else source


def written_tests(source: str) -> str:
    """The tests a model put after its code in `source` ('' when none, or it does not parse).

    The complement of :func:`without_tests`: the statements it leaves out, with the imports of
    `source` before them so the tests still name what they use.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    tests = [node for node in tree.body if _is_test(node)]
    if not any(not isinstance(n, ast.Import | ast.ImportFrom) for n in tests):
        return ""
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(ast.unparse(n) for n in dict.fromkeys([*imports, *tests])) + "\n"


def _is_test(node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and any(
        _of_pytest(d) for d in node.decorator_list
    ):
        return True  # a fixture, a parametrized or marked test: test code whatever its name
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name.startswith("test")
    if isinstance(node, ast.ClassDef):
        return node.name.startswith("Test")
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [a.name for a in node.names] == ["pytest"] or getattr(node, "module", "") == "pytest"
    if isinstance(node, ast.If):
        return "__name__" in ast.unparse(node.test)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        # A call of a test left out above (`test_f()`), or of a test runner (`pytest.main()`).
        func = node.value.func
        if isinstance(func, ast.Name):
            return func.id.startswith("test")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id in ("pytest", "unittest")
    return False


def _of_pytest(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.mark.parametrize(…)``: a decorator from pytest."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "pytest"


_STDLIB = frozenset(sys.stdlib_module_names)


def with_module_imports(code: str) -> str:
    """`code` with ``import m`` added for each standard-library module it uses but never imports.

    Models often write ``collections.Counter(...)`` or ``math.sqrt(...)`` and forget the import,
    and the code fails with a NameError on its first call. Only names used as a module is
    (``m.attr``), never bound in the code, and naming a standard-library module are imported;
    the imports go after a module docstring and ``from __future__`` imports.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    free = set(free_names(code))
    modules = sorted(
        {
            node.value.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in free
            and node.value.id in _STDLIB
            and not node.value.id.startswith("_")
        }
    )
    if not modules:
        return code
    after = after_header(tree)
    lines = code.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    imports = [f"import {m}\n" for m in modules]
    joined = "".join(lines[:after] + imports + lines[after:])
    return joined if _parses(joined) else code


def complete_from_task(code: str, task: str, defines: Sequence[str]) -> str:
    """`code` with what the task's own code gave and the reply left out.

    The imports of the task's code blocks the reply lacks are put back (a model often drops
    ``from typing import List``), a reply that continued only the body of a function
    the task wrote out is put under that function's header, and standard-library modules the
    code uses without importing them are imported (:func:`with_module_imports`); a function
    the task asks for that the reply wrote as a method not using ``self`` is defined at
    module level too (:func:`with_stated_functions`).
    """
    code = with_stated_functions(code, defines)
    blocks = [b for b in code_blocks(task) if b.strip()]
    if not blocks or not code.strip():
        return with_module_imports(code)
    given = "\n".join(blocks)
    wanted = [n for n in defines if n in defined_in_code(given)] or defined_in_code(given)
    if wanted and not set(wanted) & set(defined_in_code(code)):
        joined = given.rstrip() + "\n" + code
        if _parses(joined) and set(wanted) <= set(defined_in_code(joined)):
            return with_module_imports(joined)
    imports = [
        line
        for line in given.splitlines()
        if line.startswith(("import ", "from ")) and line.strip() not in code
    ]
    if imports:
        joined = "\n".join(imports) + "\n" + code
        if _parses(joined) or not _parses(code):
            return with_module_imports(joined)
    return with_module_imports(code)


def with_stated_functions(code: str, defines: Sequence[str]) -> str:
    """`code` with a module-level copy of each name in `defines` it has only as a method.

    A small model often puts a function the task asks for ("a convert(value, unit)
    function") inside the class it writes beside it. A method that never reads ``self`` (or a
    static method) is that function: it is copied to module level without its ``self``
    parameter and its decorators, and the class keeps its method. Methods that use ``self``,
    names the module already defines, and code that does not parse stay as they are.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    have = set(defined_in_code(code))
    found: list[str] = []
    for name in defines:
        if name in have:
            continue
        method = _free_method(tree, name)
        if method is not None:
            found.append(ast.unparse(method))
            have.add(name)
    if not found:
        return code
    return code.rstrip() + "\n\n\n" + "\n\n\n".join(found) + "\n"


def _free_method(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The first method `name` of a top-level class that never uses its instance, as a function."""
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if not isinstance(node, ast.FunctionDef) or node.name != name:
                continue
            static = any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
            )
            if node.decorator_list and not static:
                continue  # a property, a classmethod, a decorated method: not a plain function
            params = list(node.args.posonlyargs) + list(node.args.args)
            if not static:
                if not params:
                    continue
                instance = params[0].arg
                if any(isinstance(n, ast.Name) and n.id == instance for n in ast.walk(node)):
                    continue
            function = copy.deepcopy(node)
            function.decorator_list = []
            if not static:
                function.args = _without_first(node.args)
            return function
    return None


def _without_first(args: ast.arguments) -> ast.arguments:
    """`args` without its first positional parameter (a method's ``self``)."""
    if args.posonlyargs:
        return ast.arguments(
            posonlyargs=args.posonlyargs[1:], args=args.args, vararg=args.vararg,
            kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults, kwarg=args.kwarg,
            defaults=args.defaults,
        )  # fmt: skip
    return ast.arguments(
        posonlyargs=[], args=args.args[1:], vararg=args.vararg, kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults, kwarg=args.kwarg, defaults=args.defaults,
    )  # fmt: skip


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def after_header(tree: ast.Module) -> int:
    """The line after a module docstring and ``from __future__`` imports (0-based index)."""
    after = 0
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        after = node.end_lineno or node.lineno
    return after


def importing_dependencies(
    code: str, exports: Mapping[str, Sequence[str]], keep: Collection[str] = ()
) -> str:
    """`code` with its own copies of what earlier steps define replaced by imports of them.

    A step's module that defines its own class or function under a name a dependency's
    module defines shadows the one the result package exports: its code then raises and
    checks against a twin of the exported exception, or builds a twin class. Each such
    top-level definition (decorators included) is removed and the names are imported from
    the dependency instead, at the first removed definition's place, so what the step's
    checks run is the code the package will hold. `exports`: module → the names it defines
    (the first module to name one owns it); names in `keep` (what the step itself must
    define) stay. Code that does not parse is returned as it is.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    owner: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name not in keep:
                owner.setdefault(name, module)
    spans: list[tuple[int, int]] = []
    taken: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
            node.name in owner
        ):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((first, node.end_lineno or node.lineno))
            taken.setdefault(owner[node.name], []).append(node.name)
    if not spans:
        return code
    lines = code.splitlines(keepends=True)
    at = spans[0][0] - 1
    for first, last in reversed(spans):
        del lines[first - 1 : last]
    imports = "".join(
        f"from {module} import {', '.join(names)}\n" for module, names in taken.items()
    )
    lines.insert(at, imports)
    return "".join(lines)
