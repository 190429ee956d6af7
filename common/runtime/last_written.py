"""The tasks this module process last committed, kept for the claim of their next step here.

A task's next step often runs in the module that ran the step before it. Its claim then needs
no read: the task as this process wrote it is the stored one unless somebody wrote since, and
the claim's compare-and-set says which (`mutate(..., known=...)`: a lease renewal, an operator
or another replica makes the version filter match nothing, and the claim reads as usual). The
read and validation of the whole document was the largest part of a claim.

A task is kept once its commit's flush has picked the entries it publishes (`owed`), before the
first goes out: nothing of this process reads it after that. It is given to one claim only
(`take` removes it), which edits it in place, like a task just read. Only tasks whose
outbox holds nothing but fresh messages for this module's queue, due now, are kept: no timer of
a retry's backoff, and no relay, ever holds one of its entries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from common.engine.codes import OutboxKind
from common.engine.document import Task
from common.engine.states import FINAL_STATUSES

KEPT = 256  # tasks; the oldest is dropped first (its claim then reads, as before)


class LastWritten:
    def __init__(self, queue: str, size: int = KEPT):
        self._queue = queue
        self._size = size
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, task: Task, now: float) -> None:
        """Offer a task just committed and flushed; kept when its next step comes here."""
        if self._size <= 0 or task.TaskStatus in FINAL_STATUSES or not _next_is_here(task, self._queue, now):
            return
        with self._lock:
            self._tasks[task.TaskId] = task
            self._tasks.move_to_end(task.TaskId)
            while len(self._tasks) > self._size:
                self._tasks.popitem(last=False)

    def take(self, task_id: str) -> Task | None:
        """The task as this process last wrote it, for one claim; None when not kept."""
        with self._lock:
            return self._tasks.pop(task_id, None)

    def __len__(self) -> int:
        return len(self._tasks)


def _next_is_here(task: Task, queue: str, now: float) -> bool:
    outbox = task.Outbox
    return bool(outbox) and all(
        e.Kind == OutboxKind.PUBLISH and e.Queue == queue and e.DueAt <= now and task.is_fresh(e) for e in outbox
    )
