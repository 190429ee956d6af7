"""The kinds a task document stores as strings: outbox entries, waits and alarms.

Each is a `StrEnum` whose values are the strings documents have always held, so a stored
document reads as before and an unknown kind fails to parse instead of being carried silently.
The outbox kinds and the waits of a plug-in are declared in its folder (its `declares.py`,
gathered by common.engine.core.declared), so a new kind or gate adds them without a line here.
"""

from enum import StrEnum

from common.engine.core.declared import declared
from common.quick_enum import quick_value

# What an outbox entry owes; `common.engine.outbox` gives each its body and its flusher. The
# engine's own two, then each plug-in's (`OUTBOX_KINDS` in its folder's declares.py).
OutboxKind = quick_value(StrEnum("OutboxKind", [  # type: ignore[misc]
    ("PUBLISH", "publish"),  # a step message for a module's queue
    ("WEBHOOK", "webhook"),  # a status change for a webhook receiver
    *((member, value) for member, (value, _, _) in declared("OUTBOX_KINDS").items()),
], module=__name__))
OutboxKind.__doc__ = "What an outbox entry owes; `common.engine.outbox` gives each its body and its flusher."

# What a task waits for (`Task.WaitingFor.Kind`): a not-started one, or a held run's drain. The
# stored waits first, in the order a task meets them as it is created (each gate's declared place,
# the registry's order of the gates): a wait may give way to a wait declared after it
# (common.engine.states.WAIT_TRANSITIONS). Then the waits that are shown, never stored (no change
# of `WaitingFor` moves to or from them): each gate's `DERIVED_WAITS`, and a parked run's.
_STORED = sorted(declared("WAITS").items(), key=lambda member: member[1][1])
_DERIVED = [*declared("DERIVED_WAITS").items(),
            # A parked run (common.engine.states.RunState.PARKED): a step waits for someone outside
            # the flow; `Key` is the step and what its kind says it waits for ("ask: 2 more
            # approvals by operator"). Whatever the kind, the engine's own.
            ("STEP", "step")]
WaitKind = quick_value(StrEnum("WaitKind", [  # type: ignore[misc]
    *((member, value) for member, (value, _) in _STORED), *_DERIVED,
], module=__name__))
WaitKind.__doc__ = "What a task waits for (`Task.WaitingFor.Kind`): a not-started one, or a held run's drain."

DERIVED_WAITS = frozenset(WaitKind(value) for _, value in _DERIVED)


@quick_value
class AlarmKind(StrEnum):
    """Why an alarm was raised (`Alarm.Kind`)."""

    ROLLBACK_FAILED = "rollback_failed"  # a rollback failed: an operator must act
    DEAD_LETTER = "dead_letter"  # a message nobody could read
    UNREADABLE_TASK = "unreadable_task"  # a stored document that does not parse
    NO_LIVE_MODULE = "no_live_module"  # a module queue with work and no live worker
    WEBHOOK_FAILING = "webhook_failing"  # a webhook receiver keeps refusing
