"""Real subprocesses under real limits: kills, reaping, truncation, env scrubbing, network."""

from __future__ import annotations

import json
import resource
import signal
import socket
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from atom_agent.errors import ConfigError, SandboxError
from atom_agent.sandbox import Limits, SubprocessRunner, probe_isolation

Short = Callable[..., Limits]
Gone = Callable[[str], list[int]]


def script(staging: Path, name: str, source: str) -> str:
    (staging / name).write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def test_runs_in_staging_with_a_scrubbed_environment(
    runner: SubprocessRunner, staging: Path, short: Short, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-secret-from-the-parent")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_DB_PASSWORD", "hunter2")
    name = script(
        staging,
        "env.py",
        """
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
    """,
    )
    result = runner.run_python(name, cwd=staging, limits=short())
    assert result.ok, result.output
    seen = json.loads(result.output)
    assert seen["cwd"] == str(staging.resolve())
    for secret in ("GOOGLE_API_KEY", "OPENAI_API_KEY", "MY_DB_PASSWORD"):
        assert secret not in seen["env"]
    assert "hunter2" not in result.output and "AIza" not in result.output
    assert not seen["env"]["HOME"].startswith(str(Path.home()))
    assert set(seen["env"]) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PYTHONIOENCODING",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "PYTHONPATH",
        "LC_CTYPE",
    }


def test_python_path_reaches_dependency_artifacts(
    runner: SubprocessRunner, staging: Path, tmp_path: Path, short: Short
) -> None:
    dep = tmp_path / "dep"
    dep.mkdir()
    (dep / "lru.py").write_text("def answer():\n    return 42\n")
    name = script(staging, "use.py", "import lru\nprint(lru.answer())\n")
    result = runner.run_python(name, cwd=staging, limits=short(), python_path=[staging, dep])
    assert result.ok and result.output.strip() == "42"


def test_exit_code_and_traceback_come_back(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    name = script(staging, "boom.py", "raise SystemExit(3)\n")
    assert runner.run_python(name, cwd=staging, limits=short()).exit_code == 3
    name = script(staging, "err.py", "1 / 0\n")
    result = runner.run_python(name, cwd=staging, limits=short())
    assert result.exit_code == 1 and "ZeroDivisionError" in result.output
    assert not result.timed_out and result.signal is None


def test_signal_death_is_reported_even_in_a_pid_namespace(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    # The user's process is not the namespace's init, so it can die by its own signal.
    name = script(staging, "die.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    result = runner.run_python(name, cwd=staging, limits=short())
    assert result.exit_code is None and result.signal == signal.SIGKILL
    assert result.signal_name == "SIGKILL" and not result.timed_out


CHILDREN = """
    import subprocess, sys, time
    token = sys.argv[1]
    sleeper = [sys.executable, "-c", "import time; time.sleep(1000)", token]
    subprocess.Popen(sleeper)                           # an ordinary child
    subprocess.Popen(sleeper, start_new_session=True)   # one that leaves the process group
    open("started", "w").write("yes")
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["namespaces", "subreaper-only"])
def test_infinite_loop_is_killed_at_the_timeout_with_its_children(
    staging: Path, short: Short, gone: Gone, token: str, isolate: bool
) -> None:
    runner = SubprocessRunner(isolate=isolate)
    name = script(staging, "loop.py", CHILDREN + "\n    while True:\n        pass\n")
    result = runner.run_python(name, cwd=staging, limits=short(timeout_s=4.0), args=[token])
    assert (staging / "started").exists(), result.output  # the children did exist
    assert result.timed_out and result.signal == signal.SIGKILL
    assert result.exit_code is None and not result.ok
    assert result.limit_hit == "timeout"
    assert gone(token) == []


@pytest.mark.parametrize("isolate", [True, False], ids=["namespaces", "subreaper-only"])
def test_children_that_outlive_the_parent_are_reaped(
    staging: Path, short: Short, gone: Gone, token: str, isolate: bool
) -> None:
    runner = SubprocessRunner(isolate=isolate)
    name = script(
        staging,
        "fork.py",
        CHILDREN
        + """
    import os
    if os.fork() == 0:             # a classic daemon: double fork + setsid
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(1000)",
                                      token])
        os._exit(0)
    print("parent done")
    """,
    )
    result = runner.run_python(name, cwd=staging, limits=short(timeout_s=30.0), args=[token])
    assert result.exit_code == 0 and not result.timed_out, result.output
    assert "parent done" in result.output
    assert gone(token) == []


def test_ten_gigabyte_allocation_is_stopped_by_the_memory_limit(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    name = script(staging, "alloc.py", "data = bytearray(10 * 1024 ** 3)\nprint('allocated')\n")
    result = runner.run_python(name, cwd=staging, limits=short(memory_mb=256))
    assert not result.ok and "allocated" not in result.output
    assert result.exit_code == 1 and "MemoryError" in result.output
    assert result.limit_hit == "memory"


def test_cpu_limit_stops_a_busy_loop(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    name = script(staging, "spin.py", "while True:\n    pass\n")
    result = runner.run_python(name, cwd=staging, limits=short(cpu_s=1, timeout_s=60.0))
    assert not result.timed_out
    assert result.signal in (signal.SIGXCPU, signal.SIGKILL)
    assert result.limit_hit == ("cpu" if result.signal == signal.SIGXCPU else None)


def test_file_size_limit(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    name = script(staging, "big.py", "open('big.bin', 'wb').write(b'x' * (3 * 1024 ** 2))\n")
    result = runner.run_python(name, cwd=staging, limits=short(file_size_mb=1))
    assert result.exit_code == 1 and "File too large" in result.output
    assert result.limit_hit == "file_size"
    assert (staging / "big.bin").stat().st_size <= 1024**2


def test_hundred_megabytes_of_output_are_truncated_while_read(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    name = script(
        staging,
        "flood.py",
        """
        import sys
        out = sys.stdout.buffer
        out.write(b"FIRST-LINE\\n")
        chunk = b"y" * (1024 * 1024)
        for _ in range(100):
            out.write(chunk)
        out.write(b"\\nLAST-LINE\\n")
    """,
    )
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = runner.run_python(name, cwd=staging, limits=short(output_bytes=8192, timeout_s=60.0))
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.ok, result.output[-300:]
    assert result.truncated
    assert result.output_bytes == 100 * 1024 * 1024 + len(b"FIRST-LINE\n\nLAST-LINE\n")
    assert len(result.output) < 8192 + 200
    assert result.output.startswith("FIRST-LINE") and result.output.rstrip().endswith("LAST-LINE")
    assert "bytes of output truncated" in result.output
    # 100 MB held in memory would raise this process's peak RSS by ~100 MB (ru_maxrss is KiB).
    assert peak_after - peak_before < 50 * 1024


def test_stdout_and_stderr_are_both_kept(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    name = script(staging, "both.py", "import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    result = runner.run_python(name, cwd=staging, limits=short())
    assert "out" in result.output and "err" in result.output and not result.truncated


@pytest.fixture
def listener() -> object:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    yield server
    server.close()


CONNECT = """
    import socket, sys
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
        print("CONNECTED")
    except OSError as exc:
        print("REFUSED", exc)
"""


def test_no_network_unless_allowed(
    runner: SubprocessRunner, staging: Path, short: Short, listener: socket.socket
) -> None:
    if not probe_isolation(False).network:
        pytest.skip("this machine cannot give the sandbox its own network namespace")
    port = str(listener.getsockname()[1])
    name = script(staging, "net.py", CONNECT)
    isolated = runner.run_python(name, cwd=staging, limits=short(), args=[port])
    assert isolated.network_isolated and "REFUSED" in isolated.output
    allowed = runner.run_python(name, cwd=staging, limits=short(network=True), args=[port])
    assert not allowed.network_isolated and "CONNECTED" in allowed.output


def test_runner_errors_are_typed(runner: SubprocessRunner, staging: Path, short: Short) -> None:
    with pytest.raises(SandboxError, match="not a directory"):
        runner.run([sys.executable, "-c", "pass"], cwd=staging / "missing", limits=short())
    with pytest.raises(SandboxError, match="not on the sandbox PATH"):
        runner.run(["no-such-program-here"], cwd=staging, limits=short())
    with pytest.raises(ConfigError, match="timeout_s"):
        Limits(timeout_s=0)


def test_the_run_sees_only_its_own_processes(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    if not probe_isolation(False).pid_namespace:
        pytest.skip("no PID namespace here")
    name = script(
        staging,
        "ps.py",
        "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n",
    )
    result = runner.run_python(name, cwd=staging, limits=short())
    pids = json.loads(result.output)
    assert result.pid_namespace and pids == [1, 2]  # the launcher (init) and the program


def test_without_namespaces_the_result_says_so(staging: Path, short: Short) -> None:
    name = script(staging, "ok.py", "print('hi')\n")
    result = SubprocessRunner(isolate=False).run_python(name, cwd=staging, limits=short())
    assert result.ok and not result.network_isolated and not result.pid_namespace
    assert any("network not isolated" in note for note in result.notes)


def test_a_fork_bomb_is_capped_even_as_root(
    runner: SubprocessRunner, staging: Path, short: Short
) -> None:
    if not probe_isolation(False).pid_namespace:
        pytest.skip("no PID namespace here")
    name = script(
        staging,
        "bomb.py",
        """
        import os, time
        children = 0
        try:
            for _ in range(2000):
                if os.fork() == 0:
                    time.sleep(1000)
                    os._exit(0)
                children += 1
        except OSError as exc:
            print("FORK REFUSED after", children, exc.errno)
        else:
            print("FORKED ALL", children)
    """,
    )
    result = runner.run_python(name, cwd=staging, limits=short(max_processes=50, timeout_s=60.0))
    if "FORKED ALL" in result.output:
        pytest.skip("this kernel has no per-namespace pid_max (Linux < 6.14)")
    assert result.ok and "FORK REFUSED" in result.output, result.output
    forked = int(result.output.split("after")[1].split()[0])
    assert forked < 301  # the kernel's minimum pid_max bounds the namespace


def test_only_staging_and_scratch_are_writable(
    runner: SubprocessRunner, staging: Path, tmp_path: Path, short: Short
) -> None:
    if not probe_isolation(False).pid_namespace:
        pytest.skip("no private mount namespace here")
    outside = tmp_path / "outside.txt"
    name = script(
        staging,
        "writes.py",
        """
        import os, sys, tempfile
        def attempt(label, path):
            try:
                with open(path, "w") as handle:
                    handle.write("x")
                print(label, "WROTE")
            except OSError as exc:
                print(label, "REFUSED", exc.strerror)
        attempt("outside", sys.argv[1])
        attempt("relative", "in_staging.txt")
        os.makedirs("sub")
        attempt("nested", os.path.join(os.getcwd(), "sub", "f.txt"))
        attempt("tmpdir", os.path.join(tempfile.gettempdir(), "t.txt"))
        attempt("home", os.path.expanduser("~/.cache-file"))
        attempt("devnull", "/dev/null")
        attempt("etc", "/etc/atom-sandbox-probe")
    """,
    )
    result = runner.run_python(name, cwd=staging, limits=short(), args=[str(outside)])
    lines = dict(line.split(" ", 1) for line in result.output.strip().splitlines())
    assert result.ok and result.read_only_fs, result.output
    if runner.kind == "bubblewrap":
        # Outside staging under /tmp is the run's private tmpfs: the write lands there only.
        assert lines["outside"] == "WROTE" or "Read-only" in lines["outside"]
    else:
        assert lines["outside"].startswith("REFUSED") and "Read-only" in lines["outside"]
    assert lines["etc"].startswith("REFUSED")
    for ok in ("relative", "nested", "tmpdir", "home", "devnull"):
        assert lines[ok] == "WROTE", (ok, result.output)
    assert not outside.exists() and not Path("/etc/atom-sandbox-probe").exists()
    assert (staging / "in_staging.txt").read_text() == "x"
    assert (staging / "sub" / "f.txt").exists()
