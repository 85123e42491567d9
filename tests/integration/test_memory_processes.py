"""Several processes on one embedded memory store: nothing is lost, every reader catches up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from atom_agent.memory import MemoryManager
from atom_agent.session import SessionContext

pytestmark = pytest.mark.integration

WRITER = textwrap.dedent(
    """
    import json, sys
    from atom_agent.memory import MemoryManager
    from atom_agent.session import SessionContext
    workspace, shared_id = sys.argv[1], sys.argv[4]
    worker, count = int(sys.argv[2]), int(sys.argv[3])
    session = SessionContext(session_id=f"worker-{worker}", project_id="shared")
    ids = []
    with MemoryManager.open(workspace) as memory:
        for i in range(count):
            ids.append(memory.remember(session, f"worker {worker} learned lesson number {i}").id)
            found = memory.recall(session, "a memory every worker reads", limit=1)
            assert [r.id for r in found] == [shared_id]
    print(json.dumps(ids))
    """
)

READER = textwrap.dedent(
    """
    import json, sys
    from atom_agent.memory import MemoryManager
    from atom_agent.session import SessionContext
    session = SessionContext(session_id="reader", project_id="shared")
    with MemoryManager.open(sys.argv[1]) as memory:
        record = memory.get(session, sys.argv[2])
        found = memory.recall(session, sys.argv[3], limit=1)
        print(json.dumps({"content": record.content, "recalled": [r.id for r in found]}))
    """
)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_four_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    session = SessionContext(session_id="parent", project_id="shared")
    with MemoryManager.open(tmp_path) as parent:
        shared = parent.remember(session, "a memory every worker reads")
        assert parent.recall(session, limit=50)  # the parent's mirror is loaded before the workers
        workers = [_python(WRITER, str(tmp_path), str(w), "25", shared.id) for w in range(4)]
        outputs = [w.communicate(timeout=300) for w in workers]
        assert [w.returncode for w in workers] == [0, 0, 0, 0], [err for _, err in outputs]
        written = {i for out, _ in outputs for i in json.loads(out)}
        assert len(written) == 100
        # The long-lived parent sees every worker's records (its mirror refreshes) ...
        exported = {r["id"] for r in parent.export(session)}
        assert written | {shared.id} == exported
        found = parent.recall(session, "worker 3 learned lesson number 7", limit=1)
        assert found[0].content == "worker 3 learned lesson number 7"
        # ... and every worker's access counts add up (read-add-write under the file lock).
        assert parent.get(session, shared.id).access_count == 1 + 100
    with MemoryManager.open(tmp_path) as fresh:
        assert {r["id"] for r in fresh.export(session)} == exported
        assert fresh.backend.client.get_collection(fresh._sync("shared").name).count() == 101


def test_reopen_a_persisted_store_in_a_fresh_process(tmp_path: Path) -> None:
    session = SessionContext(session_id="writer", project_id="shared")
    with MemoryManager.open(tmp_path) as memory:
        record = memory.remember(session, "The staging database is refreshed every night at 02:00")
    reader = _python(READER, str(tmp_path), record.id, "when is staging data reset?")
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result == {
        "content": "The staging database is refreshed every night at 02:00",
        "recalled": [record.id],
    }
