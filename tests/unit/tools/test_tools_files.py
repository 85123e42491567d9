"""File tools: confinement in every form, size caps, binary and special files, exact edits."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from atom_agent.session import SessionContext
from atom_agent.tools.context import ToolContext
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.scope import ToolScope
from atom_agent.workspace import Workspace

Call = Callable[..., tuple[str, dict[str, Any]]]


@pytest.fixture
def tools(
    by_name: Callable[[list[BaseTool]], dict[str, BaseTool]],
) -> dict[str, BaseTool]:
    return by_name(list(FILE_TOOLS))


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_write_read_round_trip(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    status, out = call(tools["write_file"], path="pkg/impl.py", content="x = 1\ny = 2\n")
    assert status == "success"
    assert out == {"written": "pkg/impl.py", "bytes": 12, "lines": 2, "created": True}
    assert (area["staging"] / "pkg" / "impl.py").read_text() == "x = 1\ny = 2\n"
    status, out = call(tools["read_file"], path="./pkg/impl.py")
    assert status == "success" and out["content"] == "x = 1\ny = 2\n" and out["total_lines"] == 2
    _, out = call(tools["write_file"], path="pkg/impl.py", content="z = 3")
    assert out["created"] is False and out["lines"] == 1
    assert "unchanged" not in out
    _, out = call(tools["write_file"], path="pkg/impl.py", content="z = 3")
    assert out["unchanged"] is True and "change whichever is wrong" in out["note"]


def test_dependency_artifacts_are_readable(tools: dict[str, BaseTool], call: Call) -> None:
    status, out = call(tools["read_file"], path="deps/base/base.py")
    assert status == "success" and "return 'base'" in out["content"]
    assert out["path"] == "deps/base/base.py"
    status, out = call(tools["read_file"], path="deps/nope/base.py")
    assert status == "error" and "no dependency 'nope'" in out["error"]
    assert "deps/base" in out["error"]


TRAVERSALS = [
    ("../outside/secret.txt", "'..' is not allowed"),
    ("../../outside/secret.txt", "'..' is not allowed"),
    ("staging/../../outside/secret.txt", "'..' is not allowed"),
    ("a/b/../../../x", "'..' is not allowed"),
    ("deps/base/../../outside/secret.txt", "'..' is not allowed"),
    ("deps/..", "'..' is not allowed"),
    ("/etc/passwd", "is absolute"),
    ("//etc/passwd", "is absolute"),
    ("~/secret.txt", "is absolute"),
    ("..\\outside\\secret.txt", "forward slashes"),
    ("", "non-empty relative path"),
    ("impl\x00.py", "NUL byte"),
]


@pytest.mark.parametrize(("path", "reason"), TRAVERSALS)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_files"])
def test_path_traversal_is_refused_everywhere(
    tools: dict[str, BaseTool],
    call: Call,
    area: dict[str, Path],
    path: str,
    reason: str,
    tool: str,
) -> None:
    before = snapshot(area["outside"].parent)
    args: dict[str, Any] = {"path": path}
    if tool == "write_file":
        args["content"] = "pwned"
    if tool == "edit_file":
        args.update(old_text="TOP", new_text="pwned")
    status, out = call(tools[tool], **args)
    assert status == "error"
    assert reason in out["error"]
    assert snapshot(area["outside"].parent) == before  # nothing was written anywhere


def test_symlinks_that_leave_the_root_are_refused(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    staging, outside = area["staging"], area["outside"]
    os.symlink(outside, staging / "out_dir")
    os.symlink(outside / "secret.txt", staging / "secret_link.txt")
    os.symlink(area["dep"].parent.parent / "outside", area["dep"] / "escape")
    for path in ("out_dir/secret.txt", "secret_link.txt", "deps/base/escape/secret.txt"):
        status, out = call(tools["read_file"], path=path)
        assert status == "error" and "leaves the allowed area" in out["error"], path
    status, out = call(tools["write_file"], path="out_dir/new.txt", content="x")
    assert status == "error" and "leaves the allowed area" in out["error"]
    status, out = call(tools["write_file"], path="secret_link.txt", content="x")
    assert status == "error"
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    # list_files does not follow links out either.
    _, listing = call(tools["list_files"], path=".")
    assert all("secret" not in f["path"] for f in listing["files"])
    # A symlink that stays inside the staging area is fine.
    (staging / "real.py").write_text("ok = True\n")
    os.symlink(staging / "real.py", staging / "alias.py")
    status, out = call(tools["read_file"], path="alias.py")
    assert status == "success" and out["content"] == "ok = True\n"


def test_writes_outside_staging_are_refused(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    before = (area["dep"] / "base.py").read_text()
    status, out = call(tools["write_file"], path="deps/base/base.py", content="hacked")
    assert status == "error" and "read-only" in out["error"]
    status, out = call(
        tools["edit_file"], path="deps/base/base.py", old_text="base", new_text="hacked"
    )
    assert status == "error" and "read-only" in out["error"]
    assert (area["dep"] / "base.py").read_text() == before


def test_oversized_writes_are_refused(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    status, out = call(tools["write_file"], path="big.py", content="x" * 4097)
    assert status == "error" and "limit is 4096 bytes" in out["error"]
    assert not (area["staging"] / "big.py").exists()
    status, _ = call(tools["write_file"], path="fits.py", content="x" * 4096)
    assert status == "success"
    status, out = call(tools["edit_file"], path="fits.py", old_text="x" * 4096, new_text="y" * 5000)
    assert status == "error" and "limit" in out["error"]
    assert (area["staging"] / "fits.py").read_text() == "x" * 4096


def test_binary_and_non_utf8_reads_are_refused(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    (area["staging"] / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    status, out = call(tools["read_file"], path="blob.bin")
    assert status == "error" and "binary file" in out["error"]
    (area["staging"] / "latin.txt").write_bytes("café".encode("latin-1"))
    status, out = call(tools["read_file"], path="latin.txt")
    assert status == "error" and "not UTF-8" in out["error"]


def test_special_files_and_directories(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    os.mkfifo(area["staging"] / "pipe")
    status, out = call(tools["read_file"], path="pipe")  # must not block on the fifo
    assert status == "error" and "not a regular file" in out["error"]
    os.symlink("/dev/zero", area["staging"] / "zero")
    status, out = call(tools["read_file"], path="zero")
    assert status == "error"
    (area["staging"] / "sub").mkdir()
    status, out = call(tools["read_file"], path="sub")
    assert status == "error" and "is a directory" in out["error"]
    status, out = call(tools["write_file"], path="sub", content="x")
    assert status == "error" and "is a directory" in out["error"]
    status, out = call(tools["read_file"], path="missing.py")
    assert status == "error" and "does not exist" in out["error"] and "list_files" in out["error"]
    (area["staging"] / "impl.py").write_text("x = 1\n")
    status, out = call(tools["write_file"], path="impl.py/inner.py", content="x")
    assert status == "error" and "is a file, not a directory" in out["error"]
    status, out = call(tools["read_file"], path="impl.py/inner.py")
    assert status == "error" and "does not exist" in out["error"]


def test_long_files_are_read_in_parts(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    lines = [f"line {i:04d} " + "." * 40 + "\n" for i in range(1, 201)]
    (area["staging"] / "long.txt").write_text("".join(lines))
    _, first = call(tools["read_file"], path="long.txt")
    shown = first["content"].count("\n")
    assert 0 < shown < 200 and len(first["content"].encode()) <= 2048
    assert f"start_line={shown + 1}" in first["note"]
    _, second = call(tools["read_file"], path="long.txt", start_line=shown + 1, max_lines=3)
    # A window of at least 40 lines (a model paging one line a call wastes its budget).
    assert second["content"] == "".join(lines[shown : shown + 40])


def test_edit_file_requires_exactly_one_match(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path]
) -> None:
    call(tools["write_file"], path="impl.py", content="a = 1\nb = 1\nc = 2\n")
    status, out = call(tools["edit_file"], path="impl.py", old_text="= 3", new_text="= 4")
    assert status == "error" and "not found" in out["error"]
    status, out = call(tools["edit_file"], path="impl.py", old_text="= 1", new_text="= 9")
    assert status == "error" and "occurs 2 times" in out["error"]
    status, out = call(tools["edit_file"], path="impl.py", old_text="", new_text="x")
    assert status == "error" and "empty" in out["error"]
    status, out = call(tools["edit_file"], path="impl.py", old_text="b = 1", new_text="b = 5")
    assert status == "success" and out["replacements"] == 1
    assert (area["staging"] / "impl.py").read_text() == "a = 1\nb = 5\nc = 2\n"
    status, out = call(tools["edit_file"], path="nope.py", old_text="a", new_text="b")
    assert status == "error" and "does not exist" in out["error"]


def test_list_files(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path], scope: ToolScope
) -> None:
    staging = area["staging"]
    (staging / "impl.py").write_text("x = 1\n")
    (staging / "tests").mkdir()
    (staging / "tests" / "test_impl.py").write_text("def test(): pass\n")
    (staging / "__pycache__").mkdir()
    (staging / "__pycache__" / "impl.pyc").write_bytes(b"\0")
    (staging / ".tmp-impl.py.abc").write_text("in flight")
    _, out = call(tools["list_files"])
    assert [f["path"] for f in out["files"]] == [
        "impl.py",
        "tests/test_impl.py",
        "deps/base/base.py",
    ]
    assert out["files"][0]["bytes"] == 6
    _, out = call(tools["list_files"], path="deps")
    assert [f["path"] for f in out["files"]] == ["deps/base/base.py"]
    _, out = call(tools["list_files"], path="tests")
    assert [f["path"] for f in out["files"]] == ["tests/test_impl.py"]
    for i in range(60):
        (staging / f"f{i:02d}.txt").write_text("x")
    _, out = call(tools["list_files"])
    assert out["count"] == 50 and "first 50" in out["note"]
    # Relative paths only: the same prompt in every run (replay cache, prefix reuse).
    assert "deps/base" in scope.describe() and str(staging) not in scope.describe()


def test_bad_arguments_are_error_results(tools: dict[str, BaseTool], call: Call) -> None:
    status, out = call(tools["write_file"], path="impl.py")
    assert status == "error" and "content" in out["error"] and "invalid arguments" in out["error"]
    status, out = call(tools["read_file"], path="impl.py", start_line=0)
    assert status == "error" and "start_line" in out["error"]


def test_scope_for_a_workspace_attempt(
    tmp_path: Path, call: Call, by_name: Callable[[list[BaseTool]], dict[str, BaseTool]]
) -> None:
    ws = Workspace(tmp_path / "ws")
    run = ws.create_run("r1", task="t")
    base = ws.create_step(run, "base")
    first = ws.new_attempt(base)
    (first.staging / "base.py").write_text("BASE = 1\n")
    ws.commit(base, first)
    step = ws.create_step(run, "feature", depends_on=["base"])
    attempt = ws.new_attempt(step)
    scope = ToolScope.for_attempt(ws, step, attempt)
    assert scope.staging == attempt.staging
    tools = by_name(list(FILE_TOOLS))
    context = ToolContext(scope=scope, session=SessionContext(session_id="r1", project_id="p"))
    status, out = call(tools["read_file"], context, path="deps/base/base.py")
    assert status == "success" and out["content"] == "BASE = 1\n"
    call(tools["write_file"], context, path="impl.py", content="from base import BASE\n")
    assert (attempt.staging / "impl.py").exists()
    assert scope.python_path() == [attempt.staging, base.artifacts]


def test_writes_and_edits_of_python_files_report_plain_problems(
    tools: dict[str, BaseTool], call: Call
) -> None:
    _, out = call(tools["write_file"], path="impl.py", content='def f(x):\n    """Double."""\n')
    assert out["problems"] == [
        "f() has no body yet (only a docstring, pass or ...): it returns None; "
        "write the code that computes its result"
    ]
    _, out = call(tools["edit_file"], path="impl.py", old_text='"""Double."""',
                  new_text='"""Double."""\n  return 2 * x')  # fmt: skip
    assert out["problems"][0].startswith("syntax error at line 3: unindent does not match")
    _, out = call(tools["edit_file"], path="impl.py", old_text="  return", new_text="    return")
    assert "problems" not in out
    _, out = call(tools["write_file"], path="notes.txt", content="def f(:")
    assert "problems" not in out  # only Python files are checked


def test_read_only_checks_are_readable_never_writable(
    tools: dict[str, BaseTool], call: Call, area: dict[str, Path], scope: ToolScope
) -> None:
    import dataclasses

    from atom_agent.tools.context import ToolContext as Ctx

    checks = "from impl import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (area["staging"] / "test.py").write_text(checks)
    guarded = Ctx(scope=dataclasses.replace(scope, read_only=frozenset({"test.py"})),
                  session=SessionContext(session_id="s", project_id="p", run_id="r",
                                         step_id="s1", attempt=1))  # fmt: skip
    for tool, args in (
        ("write_file", {"path": "test.py", "content": "def test_add():\n    pass\n"}),
        ("write_file", {"path": "./test.py", "content": "x = 1\n"}),
        ("edit_file", {"path": "test.py", "old_text": "== 5", "new_text": "== 6"}),
    ):
        status, out = call(tools[tool], _context=guarded, **args)
        assert status == "error" and "read-only" in out["error"] and "impl.py" in out["error"]
    assert (area["staging"] / "test.py").read_text() == checks
    status, out = call(tools["read_file"], _context=guarded, path="test.py")
    assert status == "success" and out["content"] == checks
    status, _ = call(tools["write_file"], _context=guarded, path="impl.py", content="x = 1\n")
    assert status == "success"


def test_scope_describes_a_staged_start_and_read_only_checks(scope: ToolScope) -> None:
    import dataclasses

    plain = scope.describe()
    assert "read-only): they state" not in plain and "first version" not in plain
    started = dataclasses.replace(scope, started=True, read_only=frozenset({"test.py"}))
    text = started.describe()
    assert "impl.py already holds a first version" in text
    assert "test.py holds the step's checks (read-only)" in text
