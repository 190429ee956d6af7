"""Per-thread CPU of processes, split into user and system time, with their context switches:
where a difference in a process's CPU time lies (which thread, and whether in the kernel), which
an instruction count under callgrind does not show (it counts no system time, and runs one
thread at a time).

Read from /proc/<pid>/task/<tid>/{stat,status,comm} before and after a window; threads are
grouped by role and name across the processes sampled (a thread's name is its kind: `OtelBatchSpanR`
the batch processor's, `python` the main thread's). A thread that ends inside the window is
missed (its figures leave with it); one started inside counts from zero.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bench.procstat import PROC, TICKS_PER_SECOND


@dataclass(frozen=True)
class ThreadUse:
    user: float  # seconds
    system: float
    voluntary: int  # context switches: the thread waited (a lock, a read, a sleep)
    involuntary: int  # preempted: its time slice ended, or a woken thread took its core

    def minus(self, other: ThreadUse) -> ThreadUse:
        return ThreadUse(self.user - other.user, self.system - other.system,
                         self.voluntary - other.voluntary, self.involuntary - other.involuntary)  # fmt: skip

    def plus(self, other: ThreadUse) -> ThreadUse:
        return ThreadUse(self.user + other.user, self.system + other.system,
                         self.voluntary + other.voluntary, self.involuntary + other.involuntary)  # fmt: skip


ZERO = ThreadUse(0.0, 0.0, 0, 0)


def threads(pid: int) -> dict[tuple[int, int], tuple[str, ThreadUse]]:
    """(pid, tid) -> (thread name, its use so far), every thread of `pid`; empty when gone."""
    found: dict[tuple[int, int], tuple[str, ThreadUse]] = {}
    try:
        tids = [int(entry.name) for entry in (PROC / str(pid) / "task").iterdir()]
    except (FileNotFoundError, ProcessLookupError):
        return found
    for tid in tids:
        base = PROC / str(pid) / "task" / str(tid)
        try:
            stat = (base / "stat").read_text()
            status = (base / "status").read_text()
            name = (base / "comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        switches = dict(re.findall(r"^(\w+_ctxt_switches):\s+(\d+)$", status, re.MULTILINE))
        found[(pid, tid)] = (name, ThreadUse(int(fields[11]) / TICKS_PER_SECOND, int(fields[12]) / TICKS_PER_SECOND,
                                             int(switches.get("voluntary_ctxt_switches", 0)),
                                             int(switches.get("nonvoluntary_ctxt_switches", 0))))  # fmt: skip
    return found


class ThreadMeter:
    """What the threads of each role's processes (a function listing their pids when sampled)
    spent between `start()` and `stop()`, by "role/thread name"."""

    def __init__(self, roles: dict[str, Callable[[], list[int]]]):
        self._roles = roles
        self._before: dict[tuple[int, int], tuple[str, ThreadUse]] = {}

    def _sample(self) -> dict[tuple[int, int], tuple[str, ThreadUse]]:
        found: dict[tuple[int, int], tuple[str, ThreadUse]] = {}
        for role, list_pids in self._roles.items():
            for pid in list_pids():
                found.update({key: (f"{role}/{name}", use) for key, (name, use) in threads(pid).items()})
        return found

    def start(self) -> None:
        self._before = self._sample()

    def stop(self) -> dict[str, ThreadUse]:
        spent: dict[str, ThreadUse] = {}
        for key, (name, after) in self._sample().items():
            before = self._before.get(key, (name, ZERO))[1]
            spent[name] = spent.get(name, ZERO).plus(after.minus(before))
        return spent


def machine_ticks() -> tuple[float, float]:
    """(busy, stolen) seconds of every core so far, from /proc/stat: busy is all but idle and
    I/O wait; stolen, the time the hypervisor ran something else while this machine wanted a core."""
    fields = [int(n) for n in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / TICKS_PER_SECOND, steal / TICKS_PER_SECOND
