"""`from atom_agent import graph` is the compiled graph, whatever imported the submodule first."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from langgraph.graph.state import CompiledStateGraph
from tests.servers import REPO

import atom_agent.graph  # noqa: F401  # binds the submodule, as langgraph.json and run.py do
from atom_agent.graph import build_graph


def test_the_package_attribute_is_the_compiled_graph_after_a_submodule_import() -> None:
    from atom_agent import graph

    assert isinstance(graph, CompiledStateGraph)
    assert callable(graph.invoke) and callable(graph.stream)
    import atom_agent

    assert atom_agent.graph is graph
    assert callable(build_graph)
    assert sys.modules["atom_agent.graph"].graph is graph  # the module is still there


def test_every_import_order_gives_the_compiled_graph() -> None:
    # A fresh interpreter per order: the package attribute is bound only once per process.
    orders = [
        "from atom_agent import graph",
        "import atom_agent.graph\nfrom atom_agent import graph",
        "from atom_agent.graph import build_graph\nfrom atom_agent import graph",
        "import atom_agent.run\nimport atom_agent\ngraph = atom_agent.graph",
        "from atom_agent import graph\nimport atom_agent.graph\nfrom atom_agent import graph",
    ]
    check = textwrap.dedent(
        """
        from langgraph.graph.state import CompiledStateGraph
        assert isinstance(graph, CompiledStateGraph), type(graph)
        assert callable(graph.invoke)
        """
    )
    for order in orders:
        done = subprocess.run(
            [sys.executable, "-c", order + "\n" + check],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (order, done.stderr[-2000:])
