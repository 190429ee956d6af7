"""A claim whose store answer was lost: was it written after all?"""

from __future__ import annotations

from common.engine.changes import Timing
from common.engine.document import ItemRecord, StepMessage, Task
from common.engine.states import RunState
from common.errors import StoreError
from common.runtime.item_runs import ItemRuns, names_record
from common.store.tasks.port import TaskStore


def claimed_after_error(store: TaskStore, item_runs: ItemRuns, owner: str, message: StepMessage,
                        timing: Timing) -> tuple[Task | None, ItemRecord | None]:  # fmt: skip
    """After a StoreError during the claim: the task if OUR claim was written after all.

    A timeout or a dropped connection leaves the write's fate unknown. Giving the delivery back
    would waste the attempt: its redelivery finds the task "already claimed" (by us) and the
    step waits for the lease to lapse (a `retry: 0` step then rolls back). Ours means this
    owner, this dispatch, and the lease deadline this very call wrote: a duplicate delivery
    of the same dispatch running in this process has its own deadline (or renewed it since),
    so it is never taken for ours. None when it was not written, or the store cannot tell.
    An item of a step over records: the task and the record, when the record says so."""
    try:
        task = store.get(message.TaskId)
    except StoreError:
        return None, None
    if task is not None and names_record(task, message):
        record = item_runs.claimed_after_error(task, message, timing)
        return (task, record) if record is not None else (None, None)
    active = task.run(message.DispatchId) if task is not None else None
    ours = (
        active is not None
        and active.DispatchId == message.DispatchId
        and active.State is RunState.RUNNING
        and active.Owner == owner
        and active.Deadline == timing.now + timing.lease
    )
    return (task, None) if ours else (None, None)
