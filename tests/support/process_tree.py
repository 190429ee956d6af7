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
