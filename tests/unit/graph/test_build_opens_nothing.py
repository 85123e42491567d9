"""Building a graph, compiling it and reading its schemas open no store and write nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
import pytest

import atom_agent.resources
from atom_agent import Context, Resources, build_graph
from atom_agent.testing import ScriptedChatModel


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What was opened: Chroma clients and sandbox runners created, by kind."""
    seen: list[str] = []
    persistent, http = chromadb.PersistentClient, chromadb.HttpClient
    default_runner = atom_agent.resources.default_runner

    def record(kind: str, real: Any) -> Any:
        def create(*args: Any, **kwargs: Any) -> Any:
            seen.append(kind)
            return real(*args, **kwargs)

        return create

    monkeypatch.setattr(chromadb, "PersistentClient", record("chroma", persistent))
    monkeypatch.setattr(chromadb, "HttpClient", record("chroma-http", http))
    monkeypatch.setattr(atom_agent.resources, "default_runner", record("runner", default_runner))
    return seen


def test_building_compiling_and_reading_schemas_open_nothing(
    tmp_path: Path, opened: list[str]
) -> None:
    empty = tmp_path / "ws"
    empty.mkdir()
    with Resources(Context(workspace=str(empty)), models=ScriptedChatModel()) as res:
        graph = build_graph(res)
        graph.get_input_jsonschema()
        graph.get_output_jsonschema()
        assert "max_attempts" in graph.get_context_jsonschema()["properties"]
        assert "executor" in graph.get_graph().nodes
        assert list(empty.iterdir()) == []
        assert opened == []
    assert list(empty.iterdir()) == []  # closing what was never opened writes nothing


def test_the_store_and_runner_open_on_first_use(tmp_path: Path, opened: list[str]) -> None:
    with Resources(Context(workspace=str(tmp_path)), models=ScriptedChatModel()) as res:
        assert res.runner is res.runner
        assert res.memory is res.memory
    assert opened == ["runner", "chroma"]
    assert (tmp_path / "memory" / "chroma.sqlite3").is_file()
