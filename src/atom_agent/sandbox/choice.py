"""Which sandbox runs generated code here: bubblewrap when it works, else the namespace runner."""

from __future__ import annotations

import dataclasses
import logging

from atom_agent.sandbox.base import SandboxRunner
from atom_agent.sandbox.bubblewrap import BubblewrapRunner, probe_bubblewrap
from atom_agent.sandbox.cgroups import probe_cgroups
from atom_agent.sandbox.subprocess_runner import SubprocessRunner, probe_isolation

logger = logging.getLogger(__name__)

_BWRAP_COVERS = [
    "runs as uid 65534 in its own user namespace: no capabilities, no_new_privs, cannot mount",
    "sees only /usr, the interpreter, pytest and its dependencies, the dependency artifacts "
    "(read-only), staging and its scratch directory (read-write)",
    "private /tmp, /dev/shm, /dev and /proc; no host sockets (no /run, /var/run, host /tmp)",
    "no network (its own empty network namespace) unless the run allows it",
    "its own PID namespace: every process dies with the run",
]
_BWRAP_GAPS = [
    "the kernel is shared: a kernel exploit escapes (no seccomp filter, no VM)",
    "on the host the code keeps the agent's uid (user-namespace mapping); as root that uid "
    "owns the read-only files bound in, so they are readable whatever their mode",
    "CPU share and disk usage in staging are not limited (only CPU time and file size)",
    "kernel keyrings are per uid, not per namespace: the run gets a fresh session keyring, "
    "but the agent uid's user keyring stays reachable",
]
_NS_COVERS = [
    "own PID, mount, IPC and UTS namespaces where unshare works; network namespace",
    "everything but staging and scratch remounted read-only (against accidents)",
]
_NS_GAPS = [
    "runs as root with capabilities inside its namespaces: it can remount / read-write",
    "reads the whole host filesystem (secrets, other runs, the memory store)",
    "can connect to host Unix sockets and write the host's /dev/shm",
]


@dataclasses.dataclass(frozen=True)
class SandboxStatus:
    """What isolation runs get on this machine, for ``atom-agent doctor`` / ``models``."""

    runner: str
    reason: str
    tree_limit: str
    covers: list[str]
    gaps: list[str]


def default_runner(python: str | None = None) -> SandboxRunner:
    """The strongest runner that works here: bubblewrap, else namespaces (reason logged once)."""
    support = probe_bubblewrap()
    if support.usable:
        return BubblewrapRunner(python)
    logger.warning("sandbox: using the namespace runner (%s)", support.reason)
    return SubprocessRunner(python)


def sandbox_status() -> SandboxStatus:
    """The runner :func:`default_runner` picks, why, and what it does and does not cover."""
    bwrap = probe_bubblewrap()
    cgroups = probe_cgroups()
    if cgroups.usable:
        tree = f"{cgroups.reason}: memory and process count capped for the whole tree"
        tree_gap: list[str] = []
    else:
        tree = f"none ({cgroups.reason})"
        tree_gap = [
            "no cgroup: memory is capped per process only (RLIMIT_AS); the process count only "
            "by RLIMIT_NPROC for non-root users or a per-namespace pid_max"
        ]
    if bwrap.usable:
        return SandboxStatus(
            "bubblewrap", bwrap.reason, tree, list(_BWRAP_COVERS), _BWRAP_GAPS + tree_gap
        )
    isolation = probe_isolation(False)
    covers = list(_NS_COVERS) if isolation.pid_namespace else ["rlimits and process reaping only"]
    gaps = list(_NS_GAPS) + tree_gap
    if not isolation.network:
        gaps.append("no network namespace: the code can reach the network")
    reason = f"bubblewrap unusable: {bwrap.reason}; install it with `apt-get install bubblewrap`"
    return SandboxStatus("namespaces", reason, tree, covers, gaps)
