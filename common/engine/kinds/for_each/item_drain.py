"""Module drain for an item kept in a record of its own (docs/design/operations.md and
docs/design/item-records.md): the pure changes of its record, as common.engine.gates.drain.gate has
them for a run in the task document.

A delivery that reaches a drained module holds the item's pending run: `HeldBy` and `HeldSince`
on the record's run, a short deadline so the sweeper publishes it again every
`DRAIN_RECHECK_SECONDS` (common.engine.kinds.for_each.item_changes.expire_item), and the item's own
`waiting_for_drain` event. The first claim after the undrain clears the mark and records who
let it go. The task's `WaitingFor` of kind drain is derived from the held records by a reader
(`drain_wait`), never stored in the task.
"""

from __future__ import annotations

from collections.abc import Callable

from common.engine.document import HistoryEvent, Run, StepMessage, Task
from common.engine.gates.drain.gate import DRAIN_RECHECK_SECONDS
from common.engine.kinds.for_each.item_record import ItemRecord
from common.engine.kinds.for_each.item_changes import ITEM_HISTORY_LIMIT, copy_record, drop_record_outbox
from common.engine.states import FINAL_STATUSES, RunState
from common.engine.core.units import Refusal, Timing

# Records of a step a reader looks at for the runs of its items in flight (a held run, one no
# live module serves): a drained module holds every item run it is sent, so the first running
# items show the drain; the look stays one small indexed page.
IN_FLIGHT_LOOK = 50


def hold_item(record: ItemRecord, task: Task, message: StepMessage, module: str, actor: str, reason: str,
              timing: Timing) -> ItemRecord | Refusal:
    """The delivery of the item's pending run reached a drained module: hold it, not claim it.
    The first hold records `waiting_for_drain`; later ones (each re-publication) only push the
    run's deadline out."""
    if task.TaskStatus in FINAL_STATUSES:
        return Refusal(f"task is {task.TaskStatus.name}, nothing to run")
    run = record.Run
    if run is None or run.DispatchId != message.DispatchId:
        return Refusal("stale dispatch: the item has moved on")
    if run.State is not RunState.PENDING:
        return Refusal(f"run is {run.State.value}")
    new = copy_record(record)
    run = new.Run
    assert run is not None
    # Delivered: its outbox entry is owed no more (a claim drops it the same way); the sweep's
    # re-publication adds it back.
    drop_record_outbox(new, run.DispatchId)
    run.Deadline = timing.now + DRAIN_RECHECK_SECONDS
    if run.HeldBy is None:
        run.HeldBy, run.HeldSince = module, timing.now
        _note(new, timing.now, "waiting_for_drain", run, actor, f"module {module} drained by {actor}: {reason}")
    return new


def release_item_hold(claimed: ItemRecord, actor: str | None, reason: str | None, now: float) -> None:
    """In place, on a record a claim just changed: its run was held by a drain that has ended."""
    run = claimed.Run
    if run is None or run.HeldBy is None:
        return
    who = actor or "unknown"
    _note(claimed, now, "drain_released", run, who,
          f"module {run.HeldBy} undrained by {who}" + (f": {reason}" if reason else ""))
    run.HeldBy = run.HeldSince = None


def claimed_releasing(claim: Callable[[ItemRecord], ItemRecord | Refusal], undrain: Callable[[], tuple[str, str] | None],
                      now: float) -> Callable[[ItemRecord], ItemRecord | Refusal]:
    """`claim` of a record, and a hold it ends released as it goes (`undrain`: who undrained the
    module and why, read only when the record was held)."""

    def change(record: ItemRecord) -> ItemRecord | Refusal:
        claimed = claim(record)
        if isinstance(claimed, ItemRecord) and claimed.Run is not None and claimed.Run.HeldBy is not None:
            who = undrain()
            release_item_hold(claimed, *(who if who is not None else (None, None)), now)
        return claimed

    return change


def _note(record: ItemRecord, now: float, event: str, run: Run, actor: str, message: str) -> None:
    record.History.append(HistoryEvent(Time=now, Event=event, Cursor=run.Cursor, Item=run.Item, Phase=run.Phase,
                                       Attempt=run.Attempt, Actor=actor, Message=message))
    del record.History[:-ITEM_HISTORY_LIMIT]
