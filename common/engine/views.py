"""What a reader is shown of the engine's documents, the one place code outside the engine takes
it from: a unit's state and parameters, a task's history and waits, its locks, a step's items.
Pure reads, no change. Imported from its home on first use.
"""

from __future__ import annotations

from common.engine.core.declared import declared_exports
from common.exports import lazy

EXPORTS: dict[str, tuple[str, ...]] = {
    "common.engine.core.step_doc": ("STATE_FIELDS", "step_definition"),
    "common.engine.core.units": ("unit_state",),
    "common.engine.core.unit_parameters": ("command_parameters", "unit_secrets"),
    "common.engine.core.history": ("events_since", "since", "with_full_history"),
    "common.engine.core.notifications": ("EVENTS", "settled"),
    # A step that waits for people: the actions it offers now, and what it waits for.
    "common.engine.core.parking": ("find_step", "offered_actions", "parked_run", "shown_wait"),
    "common.engine.kinds.kind": ("StepAction",),
    # A key template over a task's parameters, as a lock's and a rate's table are keyed.
    "common.engine.core.key_templates": ("LockKeyError", "LockKeyTooLong", "MAX_KEY_LENGTH", "render_key", "template_fields"),
    # The units a gate holds after their dispatch (a delayed start, a drain), shown waiting.
    "common.engine.core.held_view": ("HeldView", "held_view", "show_held"),
    # What each gate says of a task in a summary (its lock, a start slot taken, a step's rate).
    "common.engine.core.gate_text": ("gate_lines", "gate_notes", "start_phrases"),
    # Each gate's part of a dry run's plan: the fields it fills, their values for a task.
    "common.engine.core.plan_parts": ("PlanPart", "plan_fields", "plan_parts"),
    # What a task waits for, in words every surface renders alike (the console's "Waiting for").
    "common.engine.core.wait_words": ("WaitWords", "run_words", "wait_words"),
    **declared_exports("VIEWS"),  # each kind's and gate's, in its folder's face.py
}
__all__ = sorted(name for names in EXPORTS.values() for name in names)
__getattr__ = lazy(__name__, EXPORTS)
