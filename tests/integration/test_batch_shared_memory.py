"""Two batch worker processes share one `chroma run` server: every lesson lands in one memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.servers import REPO, chroma_server

from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext

pytestmark = pytest.mark.integration


def test_two_workers_one_chroma_server(tmp_path: Path) -> None:
    with chroma_server(tmp_path) as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATOM_")}
        env.update(
            PYTHONPATH=str(REPO),
            ATOM_CHROMA_URL=url,
            ATOM_PROJECT_ID="team",
            ATOM_MODELS_FACTORY="tests.unit.graph.factory:batch_models",
            ATOM_TEST_LESSONS="1",
        )
        workers = []
        for name in ("alpha", "beta"):
            tasks = tmp_path / f"{name}.jsonl"
            tasks.write_text(
                "".join(json.dumps({"id": f"{name}{i}", "task": f"t {i}"}) + "\n" for i in range(2))
            )
            workers.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "atom_agent.cli",
                        "batch",
                        str(tasks),
                        "--json",
                        "--workspace",
                        str(tmp_path / f"ws-{name}"),
                    ],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )  # fmt: skip
            )
        for proc in workers:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
            assert json.loads(out)["by_status"] == {"done": 2}

        manager = MemoryManager.open(tmp_path / "unused", chroma_url=url)
        try:
            session = SessionContext(session_id="check", project_id="team")
            lessons = manager.recall(session, type="lesson_learned", limit=50)
        finally:
            manager.close()
        # Four tasks in two processes (separate workspaces), each first attempt failing a test
        # of its own (ATOM_TEST_LESSONS): four failure lessons in the shared memory.
        assert len(lessons) == 4
        assert len({m.run_id for m in lessons}) == 4
