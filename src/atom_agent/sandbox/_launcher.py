"""Sandbox launcher: set limits, run one command, enforce the wall clock, kill every descendant.

Runs as ``python -I -S _launcher.py CONFIG_FILE`` (standard library only, no site-packages).
Inside a new PID namespace it is PID 1: when it exits the kernel kills every process left in
the namespace. Without one it makes itself a child subreaper, so orphaned descendants (even
ones that called ``setsid``) are re-parented to it, and it kills them before exiting.
It writes the real outcome (exit code, signal, timed out) to ``status_file``: the exit status
of the launcher itself can't carry a signal death when it is a namespace's init.
"""

from __future__ import annotations

import json
import os
import re
import resource
import select
import signal
import sys
import time
from typing import Any

_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux / no libc symbol: the process-group kill remains
        pass


def _own_proc() -> bool:
    """True when /proc is our namespace's own (``--mount-proc``), so we have a mount ns too."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


_PID_MAX_MIN = 301  # the kernel refuses smaller pid_max values


def _cap_processes(limit: int) -> int | None:
    """Cap the processes of our PID namespace via its own ``pid_max``; returns the cap set.

    Linux ≥ 6.14 keeps ``kernel.pid_max`` per PID namespace, and it binds root too (unlike
    RLIMIT_NPROC). Only attempted when we are init of a namespace with a private /proc, so
    the write can never reach the host's value.
    """
    try:
        if os.getpid() != 1 or not _own_proc():
            return None
        value = max(_PID_MAX_MIN, limit + 1)
        with open("/proc/sys/kernel/pid_max", "w", encoding="ascii") as handle:
            handle.write(str(value))
        with open("/proc/sys/kernel/pid_max", encoding="ascii") as handle:
            return value if int(handle.read()) == value else None
    except (OSError, ValueError):  # older kernel: the sysctl is global and not writable here
        return None


_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME, _MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
_KEPT_FLAGS = {
    "nosuid": _MS_NOSUID,
    "nodev": _MS_NODEV,
    "noexec": _MS_NOEXEC,
    "noatime": _MS_NOATIME,
    "nodiratime": _MS_NODIRATIME,
    "relatime": _MS_RELATIME,
    "strictatime": _MS_STRICTATIME,
}
_STAY_WRITABLE = ("/dev", "/proc")  # device nodes (/dev/null, /dev/shm) and our private /proc


def _mount(
    libc: Any, source: str | None, target: str, flags: int, fstype: str | None = None
) -> None:
    src = source.encode() if source is not None else None
    kind = fstype.encode() if fstype is not None else None
    if libc.mount(src, target.encode(), kind, flags, None) != 0:
        errno = _errno()
        raise OSError(errno, os.strerror(errno), target)


def _errno() -> int:
    """The errno of the last failed libc call made through ctypes."""
    import ctypes

    return ctypes.get_errno()


def _mounts() -> list[tuple[str, set[str]]]:
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            found.append((point, set(fields[5].split(","))))
    return found


def _read_only_except(writable: list[str]) -> bool:
    """Make every mount of our private mount namespace read-only except `writable` paths.

    Only called as init of a namespace with a private /proc (so ``unshare`` made a private
    mount namespace too): nothing here is visible outside the run. Guards against generated
    code writing outside its staging area by accident; root can remount, so not against
    hostile code.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    try:
        _mount(libc, None, "/", _MS_REC | _MS_PRIVATE)  # never propagate anything to the host
        for path in writable:
            _mount(libc, path, path, _MS_BIND | _MS_REC)
    except OSError:
        return False
    if os.path.isdir("/dev/shm"):
        try:  # a private /dev/shm: what the run writes there is not the host's and dies with it
            _mount(libc, "tmpfs", "/dev/shm", _MS_NOSUID | _MS_NODEV, "tmpfs")
        except OSError:
            pass
    keep = set(writable)
    root_done = False
    for point, options in _mounts():
        if point in keep or any(
            point == w or point.startswith(w.rstrip("/") + "/")
            for w in list(keep) + list(_STAY_WRITABLE)
        ):
            continue
        if "ro" in options:
            root_done = root_done or point == "/"
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
        for name, bit in _KEPT_FLAGS.items():
            if name in options:
                flags |= bit
        try:
            _mount(libc, None, point, flags)
            root_done = root_done or point == "/"
        except OSError:
            continue  # e.g. a mount hidden under another one: the rest still holds
    return root_done


_KEYCTL = {"x86_64": 250, "aarch64": 219}  # syscall numbers
_KEYCTL_JOIN_SESSION_KEYRING = 1


def _new_session_keyring() -> bool:
    """Give the run a fresh, empty session keyring instead of the agent's (best effort).

    Kernel keyrings are not namespaced by mount or PID namespaces: without this the code
    would possess the keys of the keyring it inherited.
    """
    number = _KEYCTL.get(os.uname().machine)
    if number is None:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.syscall(number, _KEYCTL_JOIN_SESSION_KEYRING, None)) >= 0
    except (OSError, AttributeError):
        return False


def _exec_child(cmd: list[str], env: dict[str, str], limits: dict[str, list[int]]) -> None:
    try:
        for name, (soft, hard) in limits.items():
            resource.setrlimit(getattr(resource, name), (soft, hard))
        # Python ignores SIGXFSZ; restore the default so a file-size breach is visible as such
        # in non-Python children, while Python children still get OSError(EFBIG).
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.execve(cmd[0], cmd, env)
    except BaseException as exc:  # noqa: B036 - in a forked child nothing may escape exec
        os.write(2, f"sandbox: cannot start {cmd[0]}: {exc}\n".encode())
    os._exit(127)


def _wait(pid: int, timeout: float) -> tuple[int | None, bool]:
    """Wait for `pid` up to `timeout` seconds; returns (wait status or None, timed_out)."""
    deadline = time.monotonic() + timeout
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, True
        if pidfd is not None:
            select.select([pidfd], [], [], remaining)
        else:
            time.sleep(min(0.02, remaining))


def _children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may contain spaces.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == parent:
            found.append(int(entry))
    return found


def _kill_descendants() -> int:
    """Kill and reap every descendant (they are re-parented to us as their parents die)."""
    me = os.getpid()
    killed = 0
    for _ in range(200):
        kids = _children(me) if os.path.isdir("/proc") else []
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            if not kids:
                break
        if not kids:
            break
        time.sleep(0.005)
    return killed


def main(argv: list[str]) -> int:
    """Run the configured command; see the module docstring."""
    with open(argv[1], encoding="utf-8") as handle:
        cfg: dict[str, Any] = json.load(handle)
    _become_subreaper()
    # Under bubblewrap ("confined") the mounts are built read-only already and there are no
    # capabilities to remount or to set pid_max with: nothing to do here.
    confined = bool(cfg.get("confined"))
    pid_cap = None if confined else _cap_processes(int(cfg.get("max_processes", 0)) or 256)
    private = not confined and os.getpid() == 1 and _own_proc()
    read_only = _read_only_except(list(cfg.get("writable", []))) if private else False
    _new_session_keyring()
    # Re-enter the working directory: the old handle points below the new bind mount.
    os.chdir(cfg.get("cwd") or os.getcwd())
    pid = os.fork()
    if pid == 0:
        _exec_child(cfg["cmd"], cfg["env"], cfg["limits"])
    status, timed_out = _wait(pid, float(cfg["timeout_s"]))
    if timed_out:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    assert status is not None
    # In a PID namespace our exit kills the rest; outside one we must do it ourselves.
    leftovers = 0 if os.getpid() == 1 else _kill_descendants()
    outcome = {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "timed_out": timed_out,
        "killed_descendants": leftovers,
        "pid_namespace": os.getpid() == 1,
        "pid_max": pid_cap,
        "read_only_fs": read_only,
    }
    tmp = cfg["status_file"] + ".part"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(outcome, handle)
    os.replace(tmp, cfg["status_file"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
