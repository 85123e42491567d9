"""Supervising a sandboxed process: capped output capture, a wall clock, a tree kill."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable

KILL_MARGIN_S = 0.5
"""How long past a run's time limit the runner lets the launcher end the run and report it,
before it ends the run's whole process tree itself."""
_REAP_S = 5.0  # how long to wait for the launcher to exit once its output has ended
_DRAIN_S = 1.0  # how long to keep reading after the launcher is gone
_HEAD_SHARE = 4  # a quarter of the output cap keeps the head, the rest the tail


class Capture:
    """Keeps the head and the tail of a stream within `cap` bytes, counting the rest."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // _HEAD_SHARE
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        omitted = self.total - len(self.head) - len(self.tail)
        return (
            f"{head}\n[... {omitted} bytes of output truncated (of {self.total}); "
            f"showing the first {len(self.head)} and the last {len(self.tail)} ...]\n{tail}"
        )


def supervise(
    proc: subprocess.Popen[bytes], capture: Capture, deadline: float, stop: Callable[[], None]
) -> bool:
    """Read output until EOF; at `deadline` end the run with `stop`. True if it had to.

    `stop` ends the run's whole process tree from outside it (its cgroup, its process
    group), on time by itself: the launcher's own clock runs inside the tree, where a fork
    bomb competes with it for the CPU. `stop` runs once more at the end, so that nothing of
    the run survives it.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    killed = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _DRAIN_S:
                break
            if not killed and now > deadline:
                stop()
                killed = True
                deadline = float("inf")
            if not selector.select(0.1):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break  # EOF: every process holding the pipe is gone
            capture.feed(chunk)
    proc.stdout.close()
    try:
        proc.wait(timeout=_REAP_S)
    except subprocess.TimeoutExpired:
        killed = True
        stop()
        proc.wait()
    stop()  # belt and braces: nothing of this run may survive it
    return killed


def killpg(pgid: int) -> None:
    """SIGKILL a process group, if it is still there."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
