"""How fast the machine runs Python at the moment: a fixed piece of pure-Python work, done ten
times a second (a few percent of a core) in a process of its own, timed in its own CPU time,
until its standard input closes; then it prints the median milliseconds per piece.

The same work takes tens of percent more CPU time when the cores are shared with more (the
hypervisor's other guests, a busy sibling core): a benchmark that compares CPU time per step
across runs reads this beside it (bench/tracing_split.py).
"""

from __future__ import annotations

import select
import statistics
import sys
import time


def piece() -> int:
    total = 0
    for n in range(100_000):
        total += n * n
    return total


def main() -> None:
    taken = []
    while True:
        started = time.thread_time_ns()
        piece()
        taken.append(time.thread_time_ns() - started)
        ready, _, _ = select.select([sys.stdin], [], [], 0.1)
        if ready and not sys.stdin.read(1):  # closed: the window is over
            break
    print(statistics.median(taken) / 1e6)


if __name__ == "__main__":
    main()
