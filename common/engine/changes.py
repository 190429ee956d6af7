"""Every change the engine makes, the one place code outside the engine takes them from.

Each change is a pure function of the document as read (a task, an item record, a key's lock
document) and "now": it returns the new document to write with one compare-and-set, or a
`Refusal` saying why it does not apply. The callers (the module runtime, the relays, the sweeper,
OSS) read, call one, and write. Imported from its home on first use.
"""

from __future__ import annotations

from common.engine.core.declared import declared_exports
from common.exports import lazy

EXPORTS: dict[str, tuple[str, ...]] = {
    # What a change takes and answers.
    "common.engine.core.units": (
        "AttemptResult", "Forbidden", "IdFactory", "IN_FLIGHT_BAND", "MAX_MESSAGE_PRIORITY", "MAX_TASK_PRIORITY", "Refusal", "Timing",
        "cancel_message", "idempotency_key", "new_id", "none_if_refused", "run_key",
    ),
    # A task's life: its creation, a module's claim and outcome, the sweeper's look, a sent entry.
    "common.engine.core.entries": (
        "MAX_REDISPATCH_BACKOFF", "claim", "create_task", "expire", "finish_attempt", "mark_sent", "noted", "release",
        "renew_lease",
    ),
    # A person's action on a step that waits for people (approve, reject), whatever its kind.
    "common.engine.core.parking": ("NoSuch", "act_on_step"),
    # What the sweeper owes a task a gate holds (a freeze window ended, the awaited task looked at).
    "common.engine.core.sweeping": ("Sweep", "sweep_waits"),
    "common.engine.kinds.kind": ("ActRequest",),
    # What a store's write adds to a change: the history moved out, the webhooks owed.
    "common.engine.core.history": ("trim_history",),
    "common.engine.core.notifications": ("add_notifications", "postpone"),
    # An operator's actions.
    "common.engine.operator.actions": ("cancel", "check_reason", "compensate", "retry", "retry_rollback"),
    "common.engine.operator.flow": ("pause", "resume", "skip"),
    "common.engine.operator.hold": ("redrive", "rollback"),
    "common.engine.operator.migrate": ("Revision", "migrate"),
    **declared_exports("CHANGES"),  # each kind's and gate's, in its folder's face.py
}
__all__ = sorted(name for names in EXPORTS.values() for name in names)
__getattr__ = lazy(__name__, EXPORTS)
