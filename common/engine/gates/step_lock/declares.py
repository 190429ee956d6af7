"""What the step lock gate adds to the engine's shared tables (common/engine/core/declared.py): a
step's run waiting for its lock. Read as common.engine.codes, states and outbox are built, so it
imports nothing."""

# member: (stored value, whether its run is unclaimed: a cancel or pause may drop it)
RUN_STATES = {"WAITING_LOCK": ("waiting_lock", True)}  # a step with its own lock waiting for it (unit_locks.py)
RUN_TRANSITIONS = {"WAITING_LOCK": (
    ("pending", "waiting_lock"),  # its step's own lock first
    ("waiting_lock", "pending"),  # granted: published now
)}
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "step_lock": ("common.engine.gates.step_lock.gate:StepLockGate", 30),
}
