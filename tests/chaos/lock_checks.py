"""What a task's keyed lock (flows.yaml `lock:`) must have kept under faults, checked over the
final task documents. Pure, like tests.chaos.invariants, and made to fail on purpose in
tests/chaos/test_lock_checks.py.

held     at no moment do more tasks hold a key than its limit: a task holds it from its
         `lock_taken` to its `lock_released`, for ever once `lock_kept`. (The lock table's own
         slot opens before the first and closes after the second, so this is the narrower
         window: more than `limit` here is more than `limit` in the table too.)
inside   every claim of a task's units falls inside its hold: no work before the grant or after
         the release.
given    every final task gave its lock back (`released`, one `lock_released`), but a
         ROLLBACK_FAILED one, which keeps it (`kept`) until an operator ends the task.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from common.engine.document import Task
from common.engine.states import FINAL_STATUSES, TaskStatus


def lock_violations(tasks: Iterable[Task]) -> list[str]:
    problems: list[str] = []
    holds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    limits: dict[str, int] = {}
    for task in tasks:
        lock = task.Lock
        if lock is None:
            continue
        limits[lock.Key] = max(limits.get(lock.Key, 0), lock.Limit)
        # A step lock records its own lock_released with the unit's cursor: not the task's.
        taken = [e.Time for e in task.History if e.Event == "lock_taken"]
        released = [e.Time for e in task.History if e.Event == "lock_released" and e.Cursor is None]
        kept = any(e.Event == "lock_kept" for e in task.History)
        claims = [e.Time for e in task.History if e.Event == "claimed"]
        name = f"task {task.TaskId}"
        if len(taken) > 1 or len(released) > 1:
            problems.append(f"{name}: lock taken {len(taken)} times, released {len(released)} times")
        if not taken:
            if claims:
                problems.append(f"{name}: {len(claims)} claim(s) without ever taking lock {lock.Key}")
            continue
        start = taken[0]
        end = released[0] if released else math.inf
        holds[lock.Key].append((start, end))
        outside = [t for t in claims if not start <= t <= end]
        if outside:
            problems.append(f"{name}: {len(outside)} claim(s) outside its hold of {lock.Key} "
                            f"[{start:.3f}, {end:.3f}]: first at {outside[0]:.3f}")
        if task.TaskStatus in FINAL_STATUSES:
            want = "kept" if task.TaskStatus is TaskStatus.ROLLBACK_FAILED else "released"
            got = "kept" if kept and not released else ("released" if released else "held")
            if lock.State != want or got != want:
                problems.append(f"{name}: {task.TaskStatus.name} with its lock {lock.State} "
                                f"(history: {got}), expected {want}")
    for key, spans in sorted(holds.items()):
        peak, when = most_at_once(spans)
        if peak > limits[key]:
            problems.append(f"lock {key}: {peak} holders at {when:.3f}, limit {limits[key]}")
    return problems


def most_at_once(spans: list[tuple[float, float]]) -> tuple[int, float]:
    """The most spans open at one moment, and the first such moment. A span ending when another
    starts does not overlap it (the release is committed before the next grant)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])  # -1 first on ties
    running = peak = 0
    at = 0.0
    for time, change in edges:
        running += change
        if running > peak:
            peak, at = running, time
    return peak, at
