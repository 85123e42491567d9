"""python_problems: syntax errors and empty functions, reported by the file tools."""

from __future__ import annotations

from atom_agent.checks.source import python_problems

STUB = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    """ Check if any two numbers are closer than threshold.
    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)
    False
    """
'''


def test_a_function_with_only_a_docstring_is_a_stub() -> None:
    problems = python_problems(STUB)
    assert len(problems) == 1 and problems[0].startswith("has_close_elements() has no body yet")


def test_pass_and_ellipsis_bodies_are_stubs_in_functions_and_methods() -> None:
    source = "def f():\n    pass\n\nclass C:\n    def g(self):\n        ...\n"
    assert [p.split("()")[0] for p in python_problems(source)] == ["f", "g"]


def test_real_code_abstract_methods_overloads_and_protocols_are_fine() -> None:
    source = '''import abc
from typing import Protocol, overload


def f(x):
    """Doubles."""
    return 2 * x


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self): ...


class Shape(Protocol):
    def area(self) -> float: ...


@overload
def g(x: int) -> int: ...
def g(x):
    return x
'''
    assert python_problems(source) == []
    assert python_problems("") == [] and python_problems("x = 1\n") == []


def test_a_syntax_error_names_the_line_and_the_text() -> None:
    broken = (
        "import pytest\n\n@pytest.mark.parametrize('a', [1])\n    def test_a(a):\n        pass\n"
    )
    (problem,) = python_problems(broken)
    assert problem.startswith("syntax error at line 4: unexpected indent: def test_a(a):")
