"""A submission that waits for another task (`after_task`): the I/O around common.engine.gates.after_task.changes.

The waiter is inserted first (waiting), then listed on the awaited task (`AwaitedBy`), whose final
change wakes it through the outbox. If the awaited task ended before it could list the waiter,
the waiter is woken here at once; a crash in between is caught by the sweeper's recheck.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.errors import UnknownAwaitedTask
from common.engine.document import Task
from common.relay.outbox import OutboxPublisher
from common.engine.states import FINAL_STATUSES
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.engine.changes import Refusal, Timing, awaited_finished, listen_for

log = structlog.get_logger(__name__)


class TaskWaits:
    def __init__(self, store: TaskStore, publisher: OutboxPublisher, timing: Callable[[], Timing]):
        self._store = store
        self._publisher = publisher
        self._timing = timing

    def awaited(self, name: str) -> Task:
        """The task `after_task` names, by its id or its idempotency key."""
        found = self._store.get(name) or self._store.get_by_idempotency_key(name)
        if found is None:
            raise UnknownAwaitedTask(name)
        return found

    def listen(self, waiter: Task, awaited_id: str) -> Task:
        """List `waiter` on the awaited task; wake it now if that one has ended. The waiter as it is."""
        listed = mutate(self._store, awaited_id, lambda t: listen_for(t, waiter.TaskId))
        if not isinstance(listed, Refusal):
            return waiter
        awaited = self._store.get(awaited_id)
        if awaited is None or awaited.TaskStatus not in FINAL_STATUSES:
            return waiter  # listed already (a repeat)
        woken = mutate(self._store, waiter.TaskId,
                       lambda t: awaited_finished(t, awaited_id, awaited.TaskStatus, self._timing()))  # fmt: skip
        if isinstance(woken, Refusal):
            return self._store.get(waiter.TaskId) or waiter
        log.info("awaited task had ended", task_id=waiter.TaskId, awaited=awaited_id,
                 awaited_status=awaited.TaskStatus.name)  # fmt: skip
        self._publisher.flush(woken)
        return woken
