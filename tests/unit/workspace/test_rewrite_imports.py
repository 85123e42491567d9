"""Step imports (`impl`, `deps.<step>.impl`) become package imports, found with ast."""

from __future__ import annotations

import pytest

from atom_agent.workspace._rewrite import ImportMap, rewrite_imports

MAP = ImportMap(
    local={"impl": "pkg.calc", "helpers": "pkg.helpers"},
    deps={("adder", "impl"): "pkg.adder", ("s_2d", "impl"): "pkg.grid"},
)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("from impl import f, g as h\n", "from pkg.calc import f, g as h\n"),
        ("import impl\nimpl.f()\n", "import pkg.calc as impl\nimpl.f()\n"),
        ("import impl as m\n", "import pkg.calc as m\n"),
        ("from deps.adder.impl import add\n", "from pkg.adder import add\n"),
        ("import deps.adder.impl as a\n", "import pkg.adder as a\n"),
        ("from deps.adder import impl\n", "from pkg import adder as impl\n"),
        ("from deps.adder import impl as a\n", "from pkg import adder as a\n"),
        ("from deps.s_2d.impl import Grid\n", "from pkg.grid import Grid\n"),
        ("from helpers import tidy\n", "from pkg.helpers import tidy\n"),
        (
            "import deps.adder.impl\nx = deps.adder.impl.add(1, 2)\n",
            "import pkg.adder\nx = pkg.adder.add(1, 2)\n",
        ),
        ("import os, impl\n", "import os, pkg.calc as impl\n"),
        (
            "from deps.adder.impl import (\n    add,  # the adder\n    sub,\n)\nx = 1\n",
            "from pkg.adder import add, sub\nx = 1\n",
        ),
        (
            "def f():\n    try:\n        from impl import g  # lazy\n    except ImportError:\n"
            "        g = None\n    return g\n",
            "def f():\n    try:\n        from pkg.calc import g  # lazy\n    except ImportError:\n"
            "        g = None\n    return g\n",
        ),
        (
            "s = 'naïve'  # ünïcode\nfrom impl import f\n",
            "s = 'naïve'  # ünïcode\nfrom pkg.calc import f\n",
        ),
        ("import os\nfrom json import dumps\n", "import os\nfrom json import dumps\n"),
    ],
)
def test_every_import_form_is_rewritten(before: str, after: str) -> None:
    assert rewrite_imports(before, MAP).source == after


def test_forms_that_name_no_module_are_reported_and_kept() -> None:
    source = "from deps import adder\nimport deps.unknown.impl\n"
    rewritten = rewrite_imports(source, MAP, filename="calc/impl.py")
    assert rewritten.source == source
    assert len(rewritten.problems) == 2
    assert "calc/impl.py:1: `from deps import …`" in rewritten.problems[0]


def test_a_file_that_does_not_parse_is_an_error() -> None:
    with pytest.raises(SyntaxError):
        rewrite_imports("def f(:\n", MAP)
