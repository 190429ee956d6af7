"""The processes below a process (a module's forkserver and command children), from /proc."""

from __future__ import annotations

import contextlib
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (its command children, and theirs), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def alive(pid: int) -> bool:
    """A process that still runs: a zombie (dead, not yet reaped by whoever adopted it) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def environment(pid: int) -> dict[str, str]:
    """The environment `pid` was started with (empty if it is gone or not ours to read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def carrying(name: str, value: str) -> list[int]:
    """Every process started with `name=value` in its environment, wherever it went since (a
    `su` puts what it runs in a session of its own, out of reach of a kill of the caller's)."""
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and environment(int(e.name)).get(name) == value]  # fmt: skip
