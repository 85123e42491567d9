"""Drafts in the model's natural format: code read from replies, completed from the task."""

from __future__ import annotations

import ast
import sys
import types

import pytest

from atom_agent.names import defined_in_code
from atom_agent.replies import (
    complete_from_task,
    extract_code,
    importing_dependencies,
    with_stated_functions,
)

CODE = "def add(a, b):\n    return a + b\n"


def test_the_longest_fenced_block_that_parses_is_the_code() -> None:
    reply = f"Sure.\n```python\nx = (\n```\nand\n```python\n{CODE}```\nDone."
    assert extract_code(reply) == CODE
    assert extract_code(CODE) == CODE  # no fence, but Python
    assert extract_code("I cannot do that.") == ""


def test_tests_and_demo_code_after_the_implementation_are_left_out() -> None:
    reply = (
        f"```python\nimport pytest\n\n{CODE}\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
        "assert add(2, 2) == 4\n\nif __name__ == '__main__':\n    print(add(1, 1))\n```"
    )
    assert extract_code(reply) == CODE


def test_pytest_fixtures_and_marked_tests_after_the_implementation_are_left_out() -> None:
    # `import pytest` is left out with the tests; a fixture left behind would raise NameError
    # on import of impl.py, and the module would count as no code at all.
    reply = (
        f"```python\nimport pytest\n\n{CODE}\n\n@pytest.fixture\ndef pair():\n"
        "    return (1, 2)\n\n\n@pytest.mark.parametrize('a', [1, 2])\ndef check_add(a):\n"
        "    assert add(a, 0) == a\n\n\n@pytest.mark.slow\nclass Suite:\n    pass\n\n\n"
        "@functools.cache\ndef double(x):\n    return 2 * x\n```"
    )
    out = extract_code(reply)
    assert "pytest" not in out and out.startswith(CODE)
    assert defined_in_code(out) == ["add", "double"] and "@functools.cache" in out


def test_a_reply_cut_off_at_the_token_limit_keeps_what_parses() -> None:
    repeated = "".join("    assert add(1, 2) == 3\n" for _ in range(30))
    reply = f"```python\n{CODE}\ndef test_add():\n{repeated}    assert add(1,"
    assert extract_code(reply) == CODE


def test_what_the_task_gave_is_put_back() -> None:
    task = (
        "Complete this:\n\n```python\nfrom typing import List\n\n\n"
        'def total(xs: List[int]) -> int:\n    """Sum."""\n```\n'
    )
    body_only = "    return sum(xs)\n"
    completed = complete_from_task(body_only, task, ["total"])
    assert "def total(xs: List[int]) -> int:" in completed and completed.endswith(body_only)
    without_import = "def total(xs: List[int]) -> int:\n    return sum(xs)\n"
    assert complete_from_task(without_import, task, ["total"]).startswith("from typing import List")


def test_a_call_of_a_left_out_test_or_a_test_runner_is_left_out_too() -> None:
    reply = (
        f"```python\n{CODE}\n\ndef test_add():\n    assert add(1, 2) == 3\n\ntest_add()\n"
        "pytest.main()\nunittest.main()\n```"
    )
    assert extract_code(reply) == CODE  # test_add() would raise NameError on import
    kept = f"{CODE}\nprint(add(1, 2))\n"  # other top-level calls are the model's business
    assert extract_code(f"```python\n{kept}```") == kept


def test_a_standard_library_module_used_without_its_import_is_imported() -> None:
    counter = (
        '"""Counting."""\nfrom __future__ import annotations\n\n'
        "def once(xs):\n    return [x for x, n in collections.Counter(xs).items() if n == 1]\n"
    )
    fixed = complete_from_task(counter, "no code in this task", ["once"])
    assert fixed.splitlines()[:3] == ['"""Counting."""', "from __future__ import annotations",
                                      "import collections"]  # fmt: skip
    scope: dict[str, object] = {}
    exec(compile(fixed, "impl.py", "exec"), scope)  # noqa: S102 - our own test input
    assert scope["once"]([1, 2, 2, 3]) == [1, 3]  # type: ignore[operator]
    # imported already, bound as a name, or not a module: left as written
    for code in (
        "import math\n\ndef f(x):\n    return math.sqrt(x)\n",
        "def f(math):\n    return math.sqrt(4)\n",
        "def f(x):\n    return x.real + numpy.pi\n",
    ):
        assert complete_from_task(code, "no code", ["f"]) == code


# A reply that put the function the task asks for inside the class it wrote beside it.
METHOD_REPLY = """\
class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, owner):
        self.owner = owner
        self.balance = 0

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(amount)
        self.balance -= amount

    def transfer(self, src, dst, amount=1):
        if amount > src.balance:
            raise InsufficientFunds(amount)
        src.withdraw(amount)
        dst.balance += amount

    def drain(self, other):
        self.transfer(self, other, self.balance)

    @staticmethod
    def fee(amount):
        return amount // 100

    @property
    def label(self):
        return self.owner
"""


def test_a_stated_function_written_as_a_method_not_using_self_is_defined_at_module_level() -> None:
    out = with_stated_functions(METHOD_REPLY, ["Account", "transfer", "fee", "drain", "label"])
    ns: dict[str, object] = {}
    exec(compile(out, "impl.py", "exec"), ns)
    assert sorted(defined_in_code(out)) == ["Account", "InsufficientFunds", "fee", "transfer"]
    account, other = ns["Account"]("a"), ns["Account"]("b")  # type: ignore[operator]
    account.balance = 5
    ns["transfer"](account, other, 3)  # type: ignore[operator]
    assert (account.balance, other.balance) == (2, 3)
    assert ns["fee"](250) == 2  # type: ignore[operator]
    assert "def transfer(self" in out  # the class keeps its method
    # Through the path every reply takes: the task's names, nothing else changed.
    assert complete_from_task(METHOD_REPLY, "Write transfer(src, dst, amount).", ["transfer"]) == (
        with_stated_functions(METHOD_REPLY, ["transfer"])
    )
    assert with_stated_functions(METHOD_REPLY, ["deposit"]) == METHOD_REPLY
    assert with_stated_functions("def transfer(:\n", ["transfer"]) == "def transfer(:\n"
    already = METHOD_REPLY + "\n\ndef transfer(a, b, c):\n    return None\n"
    assert with_stated_functions(already, ["transfer"]) == already


DEPENDENCY = {"deps.step1.impl": ["Overdrawn", "Ledger"], "deps.step2.impl": ["Ledger", "fmt"]}

SHADOWING = '''\
"""Moves between ledgers."""
from __future__ import annotations
import functools


class Overdrawn(Exception):
    pass


@functools.total_ordering
class Ledger:
    def __init__(self):
        self.total = 0


def move(a, b, n):
    if n > a.total:
        raise Overdrawn(n)
    a.total -= n
    b.total += n
'''


def test_a_steps_own_copies_of_its_dependencies_names_become_imports_of_them() -> None:
    out = importing_dependencies(SHADOWING, DEPENDENCY, keep=["move"])
    tree = ast.parse(out)
    assert defined_in_code(out) == ["move"]
    # Ledger is owned by the first module that defines it; imported where Overdrawn stood.
    assert "from deps.step1.impl import Overdrawn, Ledger\n" in out
    assert "functools.total_ordering" not in out
    first_def = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    imports = [
        n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "deps.step1.impl"
    ]
    assert imports and imports[0].lineno < first_def.lineno
    assert out.startswith('"""Moves between ledgers."""\nfrom __future__ import annotations\n')


def test_names_the_step_must_define_and_code_that_shadows_nothing_stay_as_written() -> None:
    assert importing_dependencies(SHADOWING, DEPENDENCY, keep=["move", "Overdrawn", "Ledger"]) == (
        SHADOWING
    )
    assert importing_dependencies(SHADOWING, {"deps.step1.impl": ["other"]}) == SHADOWING
    assert importing_dependencies("def move(:\n", DEPENDENCY) == "def move(:\n"


def test_the_rewritten_code_raises_the_dependencys_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dependency = types.ModuleType("deps.step1.impl")
    exec("class Overdrawn(Exception):\n    pass\n\nclass Ledger:\n    total = 0\n",
         dependency.__dict__)  # fmt: skip
    for name in ("deps", "deps.step1"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "deps.step1.impl", dependency)
    step: dict[str, object] = {}
    exec(importing_dependencies(SHADOWING, DEPENDENCY, ["move"]), step)
    a, b = dependency.Ledger(), dependency.Ledger()
    with pytest.raises(dependency.Overdrawn):  # as written, its own twin class: not caught
        step["move"](a, b, 5)  # type: ignore[operator]
    assert (a.total, b.total) == (0, 0)
