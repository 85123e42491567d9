"""Hostile tool calls through run_tool: every one ends in a tool result, none hangs.

The classes of issue 13 ("Tool calls from the model"): names too long for the file system, code
in the path, lone surrogates, symlink loops, a 1,100-level tree, non-UTF-8 names, FIFOs and
devices that generated code made, catastrophic regular expressions, malformed arguments, and a
tool that raises what it should not.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool
from tests.unit.tools.running import run_tool

from atom_agent.session import SessionContext
from atom_agent.tools.calls import ToolResult
from atom_agent.tools.context import ToolContext
from atom_agent.tools.files import FILE_TOOLS
from atom_agent.tools.memory import MEMORY_TOOLS
from atom_agent.tools.scope import ToolScope
from atom_agent.tools.search import SEARCH_TOOLS

Tools = Sequence[BaseTool]

JOIN_S = 60.0  # generous: a call that has not returned by then is hung, not slow
DEEP = 1100


@dataclass
class Case:
    """One hostile call: the tool, its arguments, and what the result must say."""

    name: str
    tool: str
    args: Any
    expect: str | None  # a substring of the error; None: the call may succeed
    status: str = "error"
    setup: Callable[[Path], None] | None = field(default=None, repr=False)


def run_bounded(tools: Tools, call: dict[str, Any], context: ToolContext) -> ToolResult:
    """`run_tool` in a daemon thread: fails if it raises or has not returned in JOIN_S."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run_tool(tools, call, context)
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever escaped
            box["raised"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), f"{call['name']} hung (no result after {JOIN_S:g}s)"
    assert "raised" not in box, f"{call['name']} raised {box['raised']!r}"
    result = box["result"]
    assert isinstance(result, ToolResult)
    json.loads(result.content)  # always JSON for the model
    result.content.encode("utf-8")  # and sendable: no lone surrogates
    return result


# --- what "generated code" leaves in the staging area ----------------------------------------


def fifo(staging: Path) -> None:
    os.mkfifo(staging / "pipe")


def symlink_loops(staging: Path) -> None:
    os.symlink("loop", staging / "loop")
    os.symlink("pong", staging / "ping")
    os.symlink("ping", staging / "pong")


def deep_tree(staging: Path) -> None:
    """DEEP nested directories, made through dir fds: the full path is beyond PATH_MAX."""
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(DEEP):
            os.mkdir("level", dir_fd=fd)
            child = os.open("level", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        written = os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(written, b"needle at the bottom\n")
        os.close(written)
    finally:
        os.close(fd)


def remove_deep_tree(staging: Path) -> None:
    """Remove what :func:`deep_tree` made, iteratively (``shutil.rmtree`` recurses too deep)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fds = [os.open(staging, flags)]
    try:
        while True:
            try:
                fds.append(os.open("level", flags, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        while len(fds) > 1:
            fd = fds.pop()
            for name in os.listdir(fd):
                os.unlink(name, dir_fd=fd)
            os.close(fd)
            os.rmdir("level", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


@pytest.fixture(autouse=True)
def _no_deep_tree_left(area: dict[str, Path]) -> Iterator[None]:
    yield
    if (area["staging"] / "level").is_dir():
        remove_deep_tree(area["staging"])


def non_utf8_name(staging: Path) -> None:
    with open(os.fsencode(staging) + b"/caf\xe9.py", "wb") as handle:
        handle.write(b"needle = 'in a file whose name is latin-1'\n")


def unix_socket(staging: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(staging / "sock"))  # the socket file stays after close


def char_device(staging: Path) -> None:
    """A /dev/zero-like character device in staging (mknod needs root); skips otherwise."""
    try:
        os.mknod(staging / "zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("mknod of a character device needs root (CAP_MKNOD); not available here")


def dev_zero_link(staging: Path) -> None:
    os.symlink("/dev/zero", staging / "zero_link")


def big_file(staging: Path) -> None:
    with open(staging / "huge.txt", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no disk used


def backtracking(staging: Path) -> None:
    (staging / "aaa.txt").write_text("a" * 40 + "!\n")


def directory_named_like_a_file(staging: Path) -> None:
    (staging / "impl.py").mkdir()


CODE = "def add(a, b):\n    return a + b\n"

CASES = [
    Case(
        "300-char name", "write_file", {"path": "x" * 300, "content": "x"}, "path is 300 characters"
    ),
    Case("code in path", "write_file", {"path": CODE, "content": ""}, "put the code in `content`"),
    Case("code in path, read", "read_file", {"path": CODE}, "not code"),
    Case("path > PATH_MAX", "read_file", {"path": "a/" * 2100 + "x"}, "path is 4201 characters"),
    Case(
        "name > NAME_MAX",
        "edit_file",
        {"path": "é" * 200, "old_text": "a", "new_text": "b"},
        "400 bytes",
    ),
    Case(
        "surrogate in content",
        "write_file",
        {"path": "s.py", "content": "x = '\ud800'\n"},
        "lone UTF-16 surrogate ('\\ud800') at line 1, column 6",
    ),
    Case(
        "surrogate in path",
        "write_file",
        {"path": "a\ud800.py", "content": "x"},
        "lone UTF-16 surrogate",
    ),
    Case(
        "escaped-byte surrogate in path",
        "read_file",
        {"path": "caf\udce9.py"},
        "lone UTF-16 surrogate",
        setup=non_utf8_name,
    ),
    Case(
        "surrogate in new_text",
        "edit_file",
        {"path": "aaa.txt", "old_text": "!", "new_text": "\udfff"},
        "lone UTF-16 surrogate",
        setup=backtracking,
    ),
    Case("surrogate in pattern", "search_files", {"pattern": "\ud800"}, None, status="ok"),
    Case("symlink loop, read", "read_file", {"path": "loop"}, "symlink loop", setup=symlink_loops),
    Case(
        "symlink loop, write",
        "write_file",
        {"path": "ping", "content": "x"},
        "symlink loop",
        setup=symlink_loops,
    ),
    Case(
        "symlink loop as a parent",
        "write_file",
        {"path": "loop/x.py", "content": "x"},
        "symlink loop",
        setup=symlink_loops,
    ),
    Case("symlink loop, list", "list_files", {"path": "."}, None, status="ok", setup=symlink_loops),
    Case(
        "symlink loop, search",
        "search_files",
        {"pattern": "x"},
        None,
        status="ok",
        setup=symlink_loops,
    ),
    Case("1,100-level tree, list", "list_files", {"path": "."}, None, status="ok", setup=deep_tree),
    Case(
        "1,100-level tree, search",
        "search_files",
        {"pattern": "needle"},
        None,
        status="ok",
        setup=deep_tree,
    ),
    Case(
        "1,100-level tree, deep path",
        "read_file",
        {"path": "level/" * 70 + "bottom.txt"},
        "directories deep",
        setup=deep_tree,
    ),
    Case(
        "non-UTF-8 name, list", "list_files", {"path": "."}, None, status="ok", setup=non_utf8_name
    ),
    Case(
        "non-UTF-8 name, search",
        "search_files",
        {"pattern": "needle"},
        None,
        status="ok",
        setup=non_utf8_name,
    ),
    Case("fifo, read", "read_file", {"path": "pipe"}, "named pipe (FIFO)", setup=fifo),
    Case(
        "fifo, write",
        "write_file",
        {"path": "pipe", "content": "x"},
        "named pipe (FIFO)",
        setup=fifo,
    ),
    Case(
        "fifo, edit",
        "edit_file",
        {"path": "pipe", "old_text": "a", "new_text": "b"},
        "named pipe (FIFO)",
        setup=fifo,
    ),
    Case(
        "fifo as a parent",
        "write_file",
        {"path": "pipe/x.py", "content": "x"},
        "is a named pipe (FIFO), not a directory",
        setup=fifo,
    ),
    Case("fifo, list", "list_files", {"path": "pipe"}, "nothing to list", setup=fifo),
    Case("fifo, search", "search_files", {"pattern": "x"}, None, status="ok", setup=fifo),
    Case("socket, read", "read_file", {"path": "sock"}, "a socket", setup=unix_socket),
    Case("char device, read", "read_file", {"path": "zero"}, "character device", setup=char_device),
    Case(
        "char device, write",
        "write_file",
        {"path": "zero", "content": "x"},
        "character device",
        setup=char_device,
    ),
    Case(
        "char device, edit",
        "edit_file",
        {"path": "zero", "old_text": "a", "new_text": "b"},
        "character device",
        setup=char_device,
    ),
    Case(
        "char device, search",
        "search_files",
        {"pattern": "x"},
        None,
        status="ok",
        setup=char_device,
    ),
    Case(
        "link to /dev/zero, write",
        "write_file",
        {"path": "zero_link", "content": "x"},
        "leaves the allowed area",
        setup=dev_zero_link,
    ),
    Case("64 MiB file, read", "read_file", {"path": "huge.txt"}, "too large", setup=big_file),
    Case(
        "64 MiB file, edit",
        "edit_file",
        {"path": "huge.txt", "old_text": "a", "new_text": "b"},
        "too large",
        setup=big_file,
    ),
    # `re` backtracks 2**40 times here; the `regex` engine answers at once...
    Case(
        "(a+)+$ on 41 chars",
        "search_files",
        {"pattern": "(a+)+$", "regex": True},
        None,
        status="ok",
        setup=backtracking,
    ),
    # ...and where it backtracks too, its timeout ends the search with advice.
    Case(
        "(a|a)+$ on 41 chars",
        "search_files",
        {"pattern": "(a|a)+$", "regex": True},
        "took longer than 1s",
        setup=backtracking,
    ),
    Case(
        "directory as file",
        "write_file",
        {"path": "impl.py", "content": "x"},
        "is a directory",
        setup=directory_named_like_a_file,
    ),
    Case(
        "args nested 100,000 deep",
        "write_file",
        "[" * 100_000 + "]" * 100_000,
        "malformed tool arguments",
    ),
    Case("args not an object", "read_file", ["impl.py"], "expected a JSON object"),
    Case("path not a string", "read_file", {"path": {"nested": ["x"] * 5}}, "invalid arguments"),
    Case(
        "pattern of 100,000 groups",
        "search_files",
        {"pattern": "(" * 100_000 + ")" * 100_000, "regex": True},
        "invalid regular expression",
    ),
]


@pytest.fixture
def tools() -> Tools:
    return [*FILE_TOOLS, *SEARCH_TOOLS[:1]]  # the file tools and search_files


@pytest.fixture
def context(scope: ToolScope, session: SessionContext) -> ToolContext:
    return ToolContext(session=session, scope=scope, search_seconds=1.0)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_call_ends_in_a_tool_result(
    case: Case,
    tools: Tools,
    context: ToolContext,
    area: dict[str, Path],
) -> None:
    if case.setup is not None:
        case.setup(area["staging"])
    secret = (area["outside"] / "secret.txt").read_bytes()
    call = {"name": case.tool, "args": case.args, "id": "hostile-1"}
    result = run_bounded(tools, call, context)
    content = json.loads(result.content)
    assert result.status == case.status, content
    if case.expect is not None:
        assert case.expect in content["error"], content["error"]
    assert (area["outside"] / "secret.txt").read_bytes() == secret
    assert sorted(p.name for p in area["outside"].iterdir()) == ["secret.txt"]


def test_listings_carry_odd_names_and_bounds(
    tools: Tools, context: ToolContext, area: dict[str, Path]
) -> None:
    staging = area["staging"]
    non_utf8_name(staging)
    deep_tree(staging)
    fifo(staging)
    listing = json.loads(run_bounded(tools, _call("list_files", {}), context).content)
    paths = [f["path"] for f in listing["files"]]
    assert "caf\\xe9.py" in paths  # the undecodable byte shown, not dropped, not a crash
    assert "pipe" not in paths  # not a regular file
    assert "deeper than 64 levels" in listing["note"]
    found = json.loads(
        run_bounded(tools, _call("search_files", {"pattern": "needle"}), context).content
    )
    assert found["matches"] == ["caf\\xe9.py:1: needle = 'in a file whose name is latin-1'"]


def test_a_wide_tree_is_listed_within_bounds(
    tools: Tools, context: ToolContext, area: dict[str, Path]
) -> None:
    wide = area["staging"] / "wide"
    wide.mkdir()
    for i in range(10_500):
        (wide / f"d{i:05d}").mkdir()
    listing = json.loads(run_bounded(tools, _call("list_files", {}), context).content)
    assert listing["count"] == 0 and "stopped after looking at 10000 entries" in listing["note"]


def test_whatever_a_tool_raises_is_an_error_result(
    context: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    # The log line of a crashing tool quotes its message, a lone surrogate here: not captured,
    # as pytest-xdist cannot send such text from a worker (the result is what is tested).
    caplog.set_level(logging.CRITICAL, logger="atom_agent.tools.calls")

    def crash(kind: str) -> str:
        """A tool with a bug."""
        if kind == "os":
            raise OSError(36, "File name too long")
        if kind == "recursion":
            raise RecursionError("maximum recursion depth exceeded")
        if kind == "unicode":
            "\ud800".encode()
        raise RuntimeError(f"unexpected {kind}\ud800")

    crashing = [StructuredTool.from_function(crash)]
    expected = {
        "os": "crash failed: File name too long (ENAMETOOLONG)",
        "recursion": "crash failed: RecursionError: maximum recursion depth exceeded",
        "unicode": "crash failed: UnicodeEncodeError: 'utf-8' codec can't encode",
        "other": "crash failed: RuntimeError: unexpected other\\ud800",
    }
    for kind, text in expected.items():
        result = run_bounded(crashing, _call("crash", {"kind": kind}), context)
        assert result.status == "error" and result.route == "sandboxed"
        assert json.loads(result.content)["error"].startswith(text), result.content


NOT_CHANGED = ". Nothing was changed; fix the arguments and call it again."


@pytest.mark.parametrize(
    ("tool", "args", "problems"),
    [
        ("write_file", {"content": "x = 1\n"}, "missing required argument 'path'"),
        ("write_file", {}, "missing required arguments 'path', 'content'"),
        ("edit_file", {"path": "impl.py"}, "missing required arguments 'old_text', 'new_text'"),
        ("remember", {"type": "fact"}, "missing required argument 'content'"),
        ("forget", {}, "missing required argument 'memory_id'"),
        # A missing field beside a wrong one: both named, the wrong value shown.
        (
            "write_file",
            {"path": 3},
            "missing required argument 'content'; path: Input should be a valid string (got 3)",
        ),
        ("shout", {}, "missing required argument 'text'"),  # a plain tool: calls.py formats it
    ],
)
def test_a_missing_argument_is_named_without_the_injected_runtime(
    tool: str, args: dict[str, Any], problems: str, context: ToolContext, area: dict[str, Path]
) -> None:
    def shout(text: str) -> str:
        """A plain tool without a validation-error handler."""
        return text.upper()

    tools = [*FILE_TOOLS, *MEMORY_TOOLS, StructuredTool.from_function(shout)]
    result = run_bounded(tools, _call(tool, args), context)
    assert result.status == "error"
    error = json.loads(result.content)["error"]
    assert error == f"invalid arguments for {tool}: {problems}{NOT_CHANGED}"
    assert list(area["staging"].iterdir()) == []


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call-{name}"}
