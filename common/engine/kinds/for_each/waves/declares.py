"""What the waves of a for_each step add to the engine's shared tables
(common/engine/core/declared.py): the entry that ends a wave's gate."""

_ITEMS_BODY = "common.engine.kinds.for_each.bodies:ItemsBody"

# member: (stored value, its body, who flushes it): a wave's bake ended, or its pause timed out:
# the step's waves go on
OUTBOX_KINDS = {"WAVE_GATE": ("wave_gate", _ITEMS_BODY, "items")}
