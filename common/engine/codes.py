"""The kinds a task document stores as strings: outbox entries, waits and alarms.

Each is a `StrEnum` whose values are the strings documents have always held, so a stored
document reads as before and an unknown kind fails to parse instead of being carried silently.
"""

from enum import StrEnum


class OutboxKind(StrEnum):
    """What an outbox entry owes; `common.engine.outbox` gives each its body and its flusher."""

    PUBLISH = "publish"  # a step message for a module's queue
    WEBHOOK = "webhook"  # a status change for a webhook receiver
    START_CHILD = "start_child"  # create a sub-flow's child task
    UNDO_CHILD = "undo_child"  # roll the child back
    CANCEL_CHILD = "cancel_child"
    PAUSE_CHILD = "pause_child"
    RESUME_CHILD = "resume_child"
    CHILD_FINISHED = "child_finished"  # tell the parent how its child ended
    TASK_FINISHED = "task_finished"  # wake a task that waits for this one
    LOCK_ACQUIRE = "lock_acquire"  # join a key's line in the lock table
    LOCK_RELEASE = "lock_release"  # leave it
    OPEN_ITEMS = "open_items"  # insert a step's item records, dispatch each chain's head
    CANCEL_ITEMS = "cancel_items"  # withdraw the normal item runs nobody claimed
    ROLLBACK_ITEMS = "rollback_items"  # start the rollback of each chain's first applied item
    RESUME_ITEMS = "resume_items"  # a resumed task starts each idle chain's next item
    REOPEN_ROLLBACKS = "reopen_item_rollbacks"  # an operator retried or compensated failed item rollbacks


class WaitKind(StrEnum):
    """What a task waits for (`Task.WaitingFor.Kind`): a not-started one, or a held run's drain."""

    LOCK = "lock"  # a slot of its lock (common.engine.gates.task_lock)
    TASK = "task"  # another task's end (common.engine.gates.task_waits)
    FREEZE = "freeze"  # a freeze window's end (common.engine.gates.freeze)
    # A module's undrain (common.engine.gates.drain): shown for a task whose run a drained
    # module holds, derived from the runs and never stored in the document.
    DRAIN = "drain"


class AlarmKind(StrEnum):
    """Why an alarm was raised (`Alarm.Kind`)."""

    ROLLBACK_FAILED = "rollback_failed"  # a rollback failed: an operator must act
    DEAD_LETTER = "dead_letter"  # a message nobody could read
    UNREADABLE_TASK = "unreadable_task"  # a stored document that does not parse
    NO_LIVE_MODULE = "no_live_module"  # a module queue with work and no live worker
    WEBHOOK_FAILING = "webhook_failing"  # a webhook receiver keeps refusing
