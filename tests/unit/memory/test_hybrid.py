"""Hybrid recall: the BM25 index follows every change, finds identifiers, survives bad queries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from atom_agent.errors import MemoryValidationError
from atom_agent.memory import MemoryManager, sync
from atom_agent.memory.lexical import LexicalIndex, tokenize
from atom_agent.session import SessionContext

TARGET = "frobnicate_ledger_v7 raises OverflowError when a refund makes the total negative"
# Say what the query says in words, so that similarity alone prefers them to the target.
DISTRACTORS = [
    "The billing totals code adds tax after discounts, never before",
    "What we know about the billing totals code: it rounds every line item first",
    "The billing code keeps totals in cents to avoid float drift",
    "Refunds in the billing totals code are recorded as separate negative lines",
    "The billing totals code was reviewed in March and found correct",
    "Billing totals are recomputed nightly by the ledger job",
    "The billing totals code must be called with the customer's currency",
    "Known issue: the billing totals code is slow for invoices with many lines",
]
QUERY = "what do we know about frobnicate_ledger_v7 in the billing totals code?"


def _ids(found: list) -> list[str]:  # type: ignore[type-arg]
    return [r.id for r in found]


def test_identifier_is_found_where_vector_ranks_it_low(
    manager: MemoryManager, session: SessionContext
) -> None:
    target = manager.remember(session, TARGET)
    for text in DISTRACTORS:
        manager.remember(session, text)
    index = manager._sync(session.project_id).index()
    keep = index.mask(type_code=None, min_confidence=0.0, include_superseded=False, now=time.time())
    vector = manager.embedder.embed_query(QUERY)
    by_vector = [
        index.ids[h.row] for h in index.rank(keep, vector, QUERY, 10, time.time(), fusion="vector")
    ]
    assert by_vector.index(target.id) >= 3  # similarity alone ranks it low ...
    hybrid = _ids(manager.recall(session, QUERY, min_confidence=0.0))
    assert hybrid.index(target.id) <= 1  # ... hybrid recall near the top
    assert _ids(manager.recall(session, "frobnicate_ledger_v7", min_confidence=0.0))[0] == target.id
    # An error message pasted from test output finds it too.
    found = manager.recall(session, "E   OverflowError: frobnicate_ledger_v7", min_confidence=0.0)
    assert found[0].id == target.id


def test_lexical_index_follows_remember_forget_supersede_and_expiry(
    manager: MemoryManager, session: SessionContext
) -> None:
    old = manager.remember(session, "The zqx_export_job writes CSV files with a BOM")
    assert _ids(manager.recall(session, "zqx_export_job")) == [old.id]
    # forget: gone from recall, back with include_superseded
    manager.forget(session, old.id, reason="wrong")
    assert manager.recall(session, "zqx_export_job") == []
    assert _ids(manager.recall(session, "zqx_export_job", include_superseded=True)) == [old.id]
    # supersede: the replacement is found, the old record is not
    new = manager.remember(session, "The zqx_export_job writes CSV files without a BOM since 2.0")
    again = manager.remember(session, "The zqx_export_job BOM setting is configurable")
    manager.forget(session, again.id, replacement_id=new.id)
    assert _ids(manager.recall(session, "zqx_export_job")) == [new.id]
    # a document replaced under the same id (import): its old words no longer match
    manager.import_(session, [{"id": new.id, "content": "The qwv_importer skips blank rows"}])
    index = manager._sync(session.project_id).index()
    row = index.pos[new.id]
    assert index.lexical.scores(index.docs, ["zqx_export_job"], len(index.ids))[row] == 0
    assert index.lexical.scores(index.docs, ["qwv_importer"], len(index.ids))[row] > 0
    assert _ids(manager.recall(session, "qwv_importer")) == [new.id]
    # expiry: out of recall when it expires, and out of the index when swept
    short = manager.remember(session, "The ttl_probe_marker lives one second", ttl_s=1.0)
    assert _ids(manager.recall(session, "ttl_probe_marker")) == [short.id]
    time.sleep(1.1)
    assert manager.recall(session, "ttl_probe_marker") == []
    assert manager.sweep_expired(session) == 1
    index = manager._sync(session.project_id).index()
    assert short.id in index.pos and not index.alive[index.pos[short.id]]
    assert index.lexical.tokens[index.pos[short.id]] == []


def test_projects_do_not_share_the_lexical_index(
    manager: MemoryManager, session: SessionContext, other: SessionContext
) -> None:
    mine = manager.remember(session, "The secret_alpha_token rotates weekly")
    assert manager.recall(other, "secret_alpha_token") == []
    assert _ids(manager.recall(session, "secret_alpha_token")) == [mine.id]


def test_base_and_delta_score_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # A row scored in the delta gets the score the bm25s base gives it once rebuilt.
    docs = [f"record {i} about the cache and widget_{i % 7}" for i in range(40)]
    docs.append("the parse_config_v2 helper fails on empty files")
    index = LexicalIndex()
    index.grow(len(docs))
    query = ["parse_config_v2", "empty", "cache"]
    delta = index.scores(docs, query, len(docs))
    index.rebuild(docs)
    built = list(docs)
    assert index.base_rows == len(docs) and index.base is not None
    base = index.scores(docs, query, len(docs))
    assert delta.argmax() == base.argmax() == len(docs) - 1
    assert abs(float(delta[-1]) - float(base[-1])) < 1e-3 * float(base[-1])
    # new rows after the build: scored in the delta with the base's statistics
    docs.append("another parse_config_v2 note")
    index.changed(len(docs) - 1)
    mixed = index.scores(docs, query, len(docs))
    assert mixed[-1] > 0 and mixed[-2] == pytest.approx(base[-1], rel=1e-3)
    # the delta's weights are kept between queries: a row written since must still count,
    # and a base row rewritten since is scored by its new text only
    docs.append("an empty parse_config_v2 note")
    index.changed(len(docs) - 1)
    docs[0] = "nothing in common"
    index.changed(0)
    again = index.scores(docs, query, len(docs))
    assert again[-1] > again[-2] > 0 and again[0] == 0.0
    twin = LexicalIndex()  # the same history, scored once at the end: nothing cached
    twin.grow(len(built))
    twin.rebuild(built)
    for row in (41, 42, 0):
        twin.changed(row)
    assert twin.scores(docs, query, len(docs)).tolist() == again.tolist()


def test_tokens_keep_identifiers_and_their_parts() -> None:
    assert tokenize("ParseConfig os.path.join E1234 user_id") == [
        "parseconfig",
        "parse",
        "config",
        "os.path.join",
        "os",
        "path",
        "join",
        "e1234",
        "user_id",
        "user",
        "id",
    ]
    assert tokenize("数据库") == ["数据", "据库"]
    assert tokenize("the of and ?!") == []


@pytest.mark.parametrize(
    "query",
    ["the of and", "?!... --- ;;", "数据库连接", "Привет, как дела", "a\x00b", "😀😀"],
)
def test_odd_queries_give_a_sensible_result(
    manager: MemoryManager, session: SessionContext, query: str
) -> None:
    manager.remember(session, "数据库连接超时 when the pool is exhausted")
    manager.remember(session, "Привет is how the Russian locale greets")
    found = manager.recall(session, query, min_confidence=0.0)
    assert isinstance(found, list) and len(found) <= 10
    if query == "数据库连接":
        assert found and found[0].content.startswith("数据库连接超时")
    if query.startswith("Привет"):
        assert found and found[0].content.startswith("Привет")


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_means_no_query(
    manager: MemoryManager, session: SessionContext, query: str
) -> None:
    first = manager.remember(session, "first")
    second = manager.remember(session, "second")
    assert _ids(manager.recall(session, query, min_confidence=0.0)) == [second.id, first.id]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x" * 100_000, "query is longer than 2000 characters"),
        ("\ud800", "query is not valid Unicode text: a lone surrogate '\\\\ud800' at position 0"),
        ("user_id \udfff", "lone surrogate '\\\\udfff' at position 8"),
    ],
)
def test_bad_queries_are_clear_errors(
    manager: MemoryManager, session: SessionContext, query: str, message: str
) -> None:
    manager.remember(session, "something to find")
    with pytest.raises(MemoryValidationError, match=message):
        manager.recall(session, query)


def test_lone_surrogate_content_is_a_clear_error(
    manager: MemoryManager, session: SessionContext
) -> None:
    with pytest.raises(MemoryValidationError, match="content is not valid Unicode text"):
        manager.remember(session, "bad \ud800 text")


def test_a_fresh_manager_opens_from_the_snapshot_and_catches_up(
    tmp_path: Path, session: SessionContext
) -> None:
    with MemoryManager.open(tmp_path) as first:
        kept = first.remember_many(
            session, [{"content": f"snapshot record {i} names marker_{i}"} for i in range(30)]
        )
        assert _ids(first.recall(session, "marker_3"))[0] == kept[3].id
    snapshots = list((tmp_path / "memory").glob(".atom-memory-*.mirror.npz"))
    assert len(snapshots) == 1
    with MemoryManager.open(tmp_path) as writer:  # changes the snapshot does not hold
        late = writer.remember(session, "a late record names marker_late")
        writer.forget(session, kept[5].id)
        writer._sync(session.project_id)._index = None  # so that closing writes no snapshot
    with MemoryManager.open(tmp_path) as fresh:
        sync_ = fresh._sync(session.project_id)
        index = sync_.index()
        assert index.lexical.tokens[index.pos[kept[0].id]] is not None  # from the snapshot
        assert _ids(fresh.recall(session, "marker_late"))[0] == late.id
        assert kept[5].id not in _ids(fresh.recall(session, "marker_5"))
        assert _ids(fresh.recall(session, "marker_6"))[0] == kept[6].id
        assert len(fresh.export(session)) == 31


def test_own_writes_do_not_hide_another_writers_change(
    tmp_path: Path, session: SessionContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The refresh margin absorbs clock skew between machines; without it, a reader that wrote
    # after another writer (but before reading again) must still see that writer's change.
    monkeypatch.setattr(sync, "_REFRESH_MARGIN_S", 0.0)
    with MemoryManager.open(tmp_path) as a, MemoryManager.open(tmp_path) as b:
        a.remember(session, "a first record")
        assert a.recall(session, min_confidence=0.0)  # a's mirror is loaded and current
        other = b.remember(session, "b wrote the qqz_other_marker")
        time.sleep(0.05)
        a.remember(session, "a wrote again before reading")
        assert _ids(a.recall(session, "qqz_other_marker")) == [other.id]


WRITER = textwrap.dedent(
    """
    import json, sys
    from atom_agent.memory import MemoryManager
    from atom_agent.session import SessionContext
    workspace, worker = sys.argv[1], int(sys.argv[2])
    session = SessionContext(session_id=f"w{worker}", project_id="shared")
    ids = []
    with MemoryManager.open(workspace) as memory:
        batch = [{"content": f"worker {worker} batch note tag_w{worker}_b{i}"} for i in range(20)]
        ids += [r.id for r in memory.remember_many(session, batch)]
        for i in range(10):
            text = f"worker {worker} single note tag_w{worker}_s{i}"
            ids.append(memory.remember(session, text).id)
            if i % 3 == 0:
                memory.recall(session, f"tag_w{worker}_s{i}")  # reads interleaved with writes
    print(json.dumps(ids))
    """
)


def test_four_processes_remember_at_once(tmp_path: Path) -> None:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}
    session = SessionContext(session_id="parent", project_id="shared")
    with MemoryManager.open(tmp_path) as parent:
        parent.remember(session, "a record before the workers start")
        assert parent.recall(session, "record")  # the parent's mirror and index are loaded
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(tmp_path), str(w)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for w in range(4)
        ]
        outputs = [w.communicate(timeout=300) for w in workers]
        assert [w.returncode for w in workers] == [0] * 4, [err for _, err in outputs]
        written = [i for out, _ in outputs for i in json.loads(out)]
        assert len(written) == len(set(written)) == 120
        exported = parent.export(session)
        assert len(exported) == 121 and len({r["id"] for r in exported}) == 121
        assert len({r["content"] for r in exported}) == 121  # none stored twice
        by_content = {r["content"]: r["id"] for r in exported}
        for w in range(4):
            for tag, n in (("b", 20), ("s", 10)):
                for i in range(n):
                    found = parent.recall(session, f"tag_w{w}_{tag}{i}", limit=1)
                    assert found and by_content[found[0].content] == found[0].id
                    assert f"tag_w{w}_{tag}{i}" in found[0].content
    with MemoryManager.open(tmp_path) as fresh:  # from whichever snapshot was written last
        assert {r["id"] for r in fresh.export(session)} == {r["id"] for r in exported}
        for w in range(4):
            assert f"tag_w{w}_s9" in fresh.recall(session, f"tag_w{w}_s9", limit=1)[0].content
