"""A batch replayed from its cache: the same outcomes, no model call; a changed prompt misses."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage
from tests.unit.graph import factory

from atom_agent import Context
from atom_agent.batch import BatchOptions, run_batch
from atom_agent.models.replay import ReplayCache
from atom_agent.testing import ScriptedChatModel


def _tasks(path: Path, *texts: str) -> Path:
    lines = [json.dumps({"id": f"t{n}", "task": t}) for n, t in enumerate(texts, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _statuses(results: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    return {r["id"]: r["status"] for r in rows}


def _refusing() -> ScriptedChatModel:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        raise AssertionError("a replayed batch called the model")

    return ScriptedChatModel(respond=respond)


def test_a_batch_replayed_from_its_cache_calls_no_model_and_ends_alike(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path / "tasks.jsonl", "task number 1", "task number 2")
    ctx = Context(workspace=str(tmp_path / "ws1"), sandbox_timeout_s=30)
    cache = str(tmp_path / "replay.sqlite")
    roles = factory.batch_models()
    first = run_batch(tasks, tmp_path / "r1.jsonl",
                      BatchOptions(ctx, models=roles, cache=cache))  # fmt: skip
    assert first["model_calls"]["from_cache"] == 0 and first["model_calls"]["to_model"] > 0
    assert set(_statuses(tmp_path / "r1.jsonl").values()) == {"done"}
    again = ctx.replace(workspace=str(tmp_path / "ws2"))
    second = run_batch(tasks, tmp_path / "r2.jsonl",
                       BatchOptions(again, models=_refusing(), cache=cache))  # fmt: skip
    assert second["model_calls"] == {"from_cache": first["model_calls"]["to_model"], "to_model": 0}
    assert _statuses(tmp_path / "r2.jsonl") == _statuses(tmp_path / "r1.jsonl")


def test_a_changed_prompt_misses_and_repeated_requests_replay_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    recording = ScriptedChatModel(responses=["first", "second", "other"])
    recording.cache = ReplayCache(path)
    assert [recording.invoke("same").content for _ in range(2)] == ["first", "second"]
    assert recording.invoke("same", temperature=0.7).content == "other"
    replaying = ScriptedChatModel(responses=["fresh"])
    replaying.cache = cache = ReplayCache(path)
    assert [replaying.invoke("same").content for _ in range(2)] == ["first", "second"]
    assert replaying.invoke("same, changed").content == "fresh"  # not recorded: the model
    assert cache.counts() == {"from_cache": 2, "to_model": 1}


def test_test_times_and_object_addresses_do_not_make_a_request_new(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    recording = ScriptedChatModel(responses=["recorded"])
    recording.cache = ReplayCache(path)
    recording.invoke("got <Box object at 0x7f00aa>; 1 passed in 0.02s")
    replaying = ScriptedChatModel(responses=["fresh"])
    replaying.cache = ReplayCache(path)
    assert replaying.invoke("got <Box object at 0x7f99bb>; 1 passed in 0.31s").content == "recorded"
