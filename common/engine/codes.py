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
    RATE_TAKE = "rate_take"  # take a slot of a key's rate, or learn when the next one frees
    OPEN_ITEMS = "open_items"  # insert a step's item records, dispatch each chain's head
    CANCEL_ITEMS = "cancel_items"  # withdraw the normal item runs nobody claimed
    ROLLBACK_ITEMS = "rollback_items"  # start the rollback of each chain's first applied item
    RESUME_ITEMS = "resume_items"  # a resumed task starts each idle chain's next item
    REOPEN_ROLLBACKS = "reopen_item_rollbacks"  # an operator retried or compensated failed item rollbacks
    REDRIVE_ITEMS = "redrive_items"  # an operator redrove a held step: its failed items run again
    WAVE_GATE = "wave_gate"  # a wave's bake ended, or its pause timed out: the step's waves go on


class WaitKind(StrEnum):
    """What a task waits for (`Task.WaitingFor.Kind`): a not-started one, or a held run's drain.

    Declared in the order a task meets them as it is created (the registry's order of the gates):
    a wait may give way to a wait declared after it (common.engine.states.WAIT_TRANSITIONS)."""

    FREEZE = "freeze"  # a freeze window's end (common.engine.gates.freeze.gate)
    TASK = "task"  # another task's end (common.engine.gates.after_task.gate)
    LOCK = "lock"  # a slot of its lock (common.engine.gates.lock.gate)
    RATE = "rate"  # a start slot of its rate (common.engine.gates.rate.gate)
    # A module's undrain (common.engine.gates.drain.gate): shown for a task whose run a drained module
    # holds, derived from the runs and never stored in the document.
    DRAIN = "drain"
    # A delayed start (common.engine.gates.start_at.gate): shown for a task whose first runs wait
    # for `StartAt`, derived and never stored.
    START_AT = "start_at"
    # A parked run (common.engine.states.RunState.PARKED): a step waits for someone outside the
    # flow; `Key` is the step and what its kind says it waits for ("ask: 2 more approvals by
    # operator"). Derived from the runs, never stored.
    STEP = "step"


# Waits that are shown, never stored (no change of `WaitingFor` moves to or from them).
DERIVED_WAITS = frozenset({WaitKind.DRAIN, WaitKind.START_AT, WaitKind.STEP})


class AlarmKind(StrEnum):
    """Why an alarm was raised (`Alarm.Kind`)."""

    ROLLBACK_FAILED = "rollback_failed"  # a rollback failed: an operator must act
    DEAD_LETTER = "dead_letter"  # a message nobody could read
    UNREADABLE_TASK = "unreadable_task"  # a stored document that does not parse
    NO_LIVE_MODULE = "no_live_module"  # a module queue with work and no live worker
    WEBHOOK_FAILING = "webhook_failing"  # a webhook receiver keeps refusing
