"""CPU time and memory of processes, read from /proc: what a step costs each process role.

The benchmark samples a process tree (a module and its command children) before and after a
measured window; the difference in user+system CPU time, divided by the step transitions done
in the window, is the CPU cost per transition of that role. RabbitMQ is found as the process
listening on the broker's port, so a private node or the system one are told apart.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
PROC = Path("/proc")


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float  # user + system, of the process and the threads it runs
    rss_bytes: int
    waited_cpu_seconds: float = 0.0  # user + system of its children that ended and it waited for


def usage(pid: int) -> Usage | None:
    """None when the process is gone (a child may exit between the listing and the read)."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        statm = (PROC / str(pid) / "statm").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime, cutime, cstime = (int(n) for n in fields[11:15])
    return Usage((utime + stime) / TICKS_PER_SECOND, int(statm.split()[1]) * PAGE_BYTES,
                 (cutime + cstime) / TICKS_PER_SECOND)


def children(pid: int) -> list[int]:
    """Direct children of `pid`, over all its threads."""
    found: list[int] = []
    try:
        for task in (PROC / str(pid) / "task").iterdir():
            text = (task / "children").read_text()
            found.extend(int(c) for c in text.split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return found


def tree(pid: int) -> list[int]:
    """`pid` and every descendant."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo.extend(children(current))
    return pids


def cpu_of(pids: list[int]) -> dict[int, float]:
    sampled = {}
    for pid in pids:
        got = usage(pid)
        if got is not None:
            sampled[pid] = got.cpu_seconds
    return sampled


def listening_pid(port: int) -> int | None:
    """The process holding a TCP socket listening on `port` (IPv4 or IPv6), if we may see it."""
    inodes = set()
    for table in ("net/tcp", "net/tcp6"):
        try:
            lines = (PROC / table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{inode}]")
    if not inodes:
        return None
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return int(entry.name)
        except (PermissionError, FileNotFoundError, ProcessLookupError):
            continue
    return None


class CpuMeter:
    """CPU seconds spent by process roles between `start()` and `stop()`.

    A role is a function listing its pids when sampled (a module's command children are
    long-lived, so both samples see them; one replaced inside the window is missed, which
    under-counts that role a little).
    """

    def __init__(self, roles: dict[str, Callable[[], list[int]]]):
        self._roles = roles
        self._before: dict[str, dict[int, float]] = {}

    def _sample(self) -> dict[str, dict[int, float]]:
        return {role: cpu_of(list_pids()) for role, list_pids in self._roles.items()}

    def start(self) -> None:
        self._before = self._sample()

    def stop(self) -> dict[str, float]:
        after = self._sample()
        return {
            role: sum(cpu - self._before.get(role, {}).get(pid, 0.0) for pid, cpu in pids.items())
            for role, pids in after.items()
        }


def descendants(roots: list[int]) -> list[int]:
    return [pid for root in roots for pid in tree(root) if pid != root]
