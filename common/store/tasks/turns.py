"""Turns on a task within a process: its threads take turns on a document instead of racing.

Every change is a compare-and-set, so correctness never depends on this lock: another process
may still write the task between a read and a write, and the version filter catches it. What
the lock saves is waste: eight threads of one module working on the items of one `for_each`
(docs/design/task-document.md, "Units") all read the same 90 KB document, change it, and all but one
lose the race and start over; queued, each reads the document once, after the one before it wrote.
"""

from __future__ import annotations

import threading

_guard = threading.Lock()
_locks: dict[str, tuple[threading.Lock, int]] = {}  # task id -> (its lock, threads using it)


class task_turn:  # noqa: N801  (used as `with task_turn(task_id):`, like the function it was)
    """Hold the task's lock in this process. Not re-entrant: a change is pure and never writes
    another task, so nothing inside a turn takes a second one. A class, not a generator-based
    context manager: every task write passes here, and a generator's frame costs more."""

    __slots__ = ("_task_id", "_lock")

    def __init__(self, task_id: str):
        self._task_id = task_id

    def __enter__(self) -> None:
        task_id = self._task_id
        with _guard:
            lock, users = _locks.get(task_id) or (threading.Lock(), 0)
            _locks[task_id] = (lock, users + 1)
        self._lock = lock
        try:
            lock.acquire()
        except BaseException:  # interrupted while waiting: give the place back
            self._leave()
            raise

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        self._leave()

    def _leave(self) -> None:
        task_id = self._task_id
        with _guard:
            lock, users = _locks[task_id]
            if users == 1:
                del _locks[task_id]  # the table holds only tasks some thread is working on
            else:
                _locks[task_id] = (lock, users - 1)
