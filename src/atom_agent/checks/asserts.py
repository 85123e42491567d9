"""Checks from test code a model wrote in its natural format (``assert f(x) == y``).

Asking a small model for a contract as JSON costs many tokens and gives garbage; asking for
pytest asserts in a fenced block is what it does best. Code reads the asserts back into
checks: ``assert f(x) == y`` / ``is y``, ``assert f(x)`` / ``assert not f(x)`` (the value's
truth), ``assert abs(f(x) - y) < tol`` (with its tolerance), and ``with pytest.raises(E): f(x)``
(or ``assert f(x) == E`` for an exception class E, which a small model writes meaning the
same), with the statements before them in a test function as setup.
Anything else is left out.
"""

from __future__ import annotations

import ast
import copy

from atom_agent.state import Check


def checks_from_tests(source: str, *, criterion: str = "") -> list[Check]:
    """The checks the asserts of `source` state (unparsable source gives none).

    Tests after code that does not parse are not read: on our development tasks the model that
    wrote the syntax error also wrote wrong expected values, and reading them cost one task four
    more calls for the same commit (docs/measurements.md, session 17).
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: dict[str, Check] = {}
    bodies = [tree.body]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            bodies += _parametrized(node)
    for body in bodies:
        setup: list[str] = []
        for stmt in body:
            check = _check_of(stmt, setup, criterion)
            if check is not None:
                found.setdefault(check.describe(), check)
            elif (
                isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr)
                and body is not tree.body
                and not _is_text(stmt)
            ):
                setup.append(ast.unparse(stmt))
    return list(found.values())


def _is_text(stmt: ast.stmt) -> bool:
    """A bare string (a test's docstring): it does nothing, and it is no input of the check.

    Kept as setup, a docstring that states a clause of the task made every literal of the
    check look like the task's own (:func:`atom_agent.verification.clauses.restates_task`).
    """
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _parametrized(func: ast.FunctionDef) -> list[list[ast.stmt]]:
    """The body of a test function, once per ``@pytest.mark.parametrize`` case (names bound)."""
    cases: list[dict[str, ast.expr]] = [{}]
    for decorator in func.decorator_list:
        if not (
            isinstance(decorator, ast.Call)
            and ast.unparse(decorator.func).endswith("parametrize")
            and len(decorator.args) >= 2
            and isinstance(decorator.args[0], ast.Constant)
            and isinstance(decorator.args[0].value, str)
            and isinstance(decorator.args[1], ast.List | ast.Tuple)
        ):
            continue
        names = [n.strip() for n in decorator.args[0].value.split(",") if n.strip()]
        values: list[dict[str, ast.expr]] = []
        for item in decorator.args[1].elts:
            row = item.elts if isinstance(item, ast.Tuple) and len(names) > 1 else [item]
            if len(row) == len(names):
                values.append(dict(zip(names, row, strict=True)))
        cases = [{**case, **value} for case in cases for value in values]
    if cases == [{}]:
        return [func.body]
    return [[_Bind(case).visit(copy.deepcopy(stmt)) for stmt in func.body] for case in cases]


class _Bind(ast.NodeTransformer):
    """Replaces the parameter names of a case by their values."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return copy.deepcopy(self.values[node.id])
        return node


def _check_of(stmt: ast.stmt, setup: list[str], criterion: str) -> Check | None:
    def call(expr: ast.expr) -> str:
        return "\n".join([*setup, ast.unparse(expr)])

    if isinstance(stmt, ast.Assert):
        test = stmt.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.Is)
        ):
            if _raises(test.comparators[0]):  # ``f(x) == pytest.raises(E)``: says nothing
                return None
            error = _exception_class(test.comparators[0])
            if error:  # ``assert f(0) == ValueError``: the test means that f(0) raises it
                return Check(call=call(test.left), raises=error, criterion=criterion)
            return Check(
                call=call(test.left),
                expect=ast.unparse(test.comparators[0]),
                criterion=criterion,
            )
        if _within_tolerance(test):
            return Check(call=call(test), expect="True", criterion=criterion)
        # ``assert not p[1:2]`` holds for ``[]``, which is not ``== False``: truth is bool().
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return Check(call=call(_truth(test.operand)), expect="False", criterion=criterion)
        if isinstance(test, ast.Call):
            return Check(call=call(_truth(test)), expect="True", criterion=criterion)
        return None
    if isinstance(stmt, ast.With) and len(stmt.items) == 1:
        ctx = stmt.items[0].context_expr
        raised = _raises(ctx)
        last = stmt.body[-1] if stmt.body else None
        if raised and isinstance(last, ast.Expr):
            inner = [ast.unparse(s) for s in stmt.body[:-1]]
            source = "\n".join([*setup, *inner, ast.unparse(last.value)])
            return Check(call=source, raises=raised, criterion=criterion)
    return None


def _truth(expr: ast.expr) -> ast.expr:
    """``bool(expr)``, unless `expr` already is a ``bool(…)`` or ``isinstance(…)`` call."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in ("bool", "isinstance", "callable", "hasattr", "all", "any")
    ):
        return expr
    return ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[expr], keywords=[])


def _within_tolerance(test: ast.expr) -> bool:
    """``abs(a - b) < tol`` (or ``<=``): how tests compare floats, kept with its tolerance."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Lt | ast.LtE)
        and isinstance(test.left, ast.Call)
        and isinstance(test.left.func, ast.Name)
        and test.left.func.id == "abs"
        and len(test.left.args) == 1
        and isinstance(test.left.args[0], ast.BinOp)
        and isinstance(test.left.args[0].op, ast.Sub)
    )


def _exception_class(expr: ast.expr) -> str:
    """``ValueError`` / ``errors.BadInput`` compared with as a value: the class's name, else ''."""
    name = ast.unparse(expr) if isinstance(expr, ast.Name | ast.Attribute) else ""
    last = name.rpartition(".")[2]
    if last.endswith(("Error", "Exception")) or last in ("StopIteration", "KeyboardInterrupt"):
        return name
    return ""


def _raises(expr: ast.expr) -> str:
    """``pytest.raises(ValueError)`` → ``ValueError`` ('' for anything else)."""
    if not isinstance(expr, ast.Call) or not expr.args:
        return ""
    func = ast.unparse(expr.func)
    if func not in ("pytest.raises", "raises"):
        return ""
    return ast.unparse(expr.args[0])
