"""The sweeper's part of a wait for another task (common.engine.core.sweeping): the safety net
under the outbox wake-up (a crash before the awaited task listed the waiter). At `RecheckAt` it
looks at the awaited task: ended, the waiter is woken; else it looks again later."""

from __future__ import annotations

from common.engine.codes import WaitKind
from common.engine.core.sweeping import Read, Sweep
from common.engine.document import Task
from common.engine.gates.after_task.changes import awaited_finished, recheck_later
from common.engine.states import FINAL_STATUSES


def sweep(task: Task, now: float, read: Read) -> Sweep | None:
    wait = task.WaitingFor
    if wait is None or wait.Kind != WaitKind.TASK or wait.TaskId is None or (wait.RecheckAt or 0) > now:
        return None
    awaited_id = wait.TaskId
    awaited = read(awaited_id)
    if awaited is None or awaited.TaskStatus not in FINAL_STATUSES:
        return Sweep(lambda t, timing: recheck_later(t, awaited_id, timing), flush=False)
    status = awaited.TaskStatus
    return Sweep(lambda t, timing: awaited_finished(t, awaited_id, status, timing),
                 log="woke a task waiting for another", fields={"awaited": awaited_id})


SWEEP = sweep
