"""The command line starts at once: building its parser loads no model, graph or memory library.

`atom-agent --help`, a bad option and the light commands (`runs list`, a rejected `memory add`)
used to import LangChain's chat models, LangGraph and Chroma first (about 4 s on two cores);
each command now loads them when it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.cli.process import REPO, clean_error, cli

HEAVY = ("chromadb", "langgraph", "langchain", "langchain_core.language_models", "llama_cpp",
         "onnxruntime")  # fmt: skip

_PROBE = (
    "import json, sys\n"
    "from atom_agent.cli import build_parser\n"
    "build_parser()\n"
    "print(json.dumps(sorted(m for m in sys.modules)))\n"
)


def _loaded_after(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_building_the_parser_loads_no_model_graph_or_memory_library() -> None:
    loaded = _loaded_after(_PROBE)
    heavy = [m for m in loaded if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]
    assert heavy == [], heavy[:20]


def test_the_light_memory_modules_load_without_chroma() -> None:
    probe = (
        "import json, sys\n"
        "import atom_agent.memory.records, atom_agent.models.weights\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = _loaded_after(probe)
    assert not any(m == "chromadb" or m.startswith(("chromadb.", "langchain")) for m in loaded)


def test_every_command_still_has_its_handler(tmp_path: Path) -> None:
    # The handlers import what they need: a command that runs still finds it.
    listed = cli(tmp_path / "ws", "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert json.loads(listed.stdout) == []
    clean_error(cli(tmp_path / "ws", "memory", "add", "  "), "memory add", "empty")
    added = cli(tmp_path / "ws", "memory", "add", "Always use type hints.", "--json")
    assert added.returncode == 0, added.stderr[-2000:]
    shown = cli(tmp_path / "ws", "memory", "list", "--json")
    assert "type hints" in shown.stdout, shown.stdout[-2000:]
