"""What the lock gates (a task's lock, a step's) add to the engine's shared tables
(common/engine/core/declared.py): the task's wait, the entries its table's relay carries, and a
step's run waiting for its lock. Read as common.engine.codes, states and outbox
are built, so it imports nothing: its entries' bodies (bodies.py) are named, not imported."""

_LOCK_ACQUIRE_BODY = "common.engine.gates.lock.bodies:LockAcquireBody"
_LOCK_RELEASE_BODY = "common.engine.gates.lock.bodies:LockReleaseBody"

WAITS = {"LOCK": ("lock", 30)}  # a slot of its lock (common.engine.gates.lock.gate)
FLUSHERS = {"LOCKS": "locks"}  # a change of the lock table (common.store.gates.lock.relay)
OUTBOX_KINDS = {
    "LOCK_ACQUIRE": ("lock_acquire", _LOCK_ACQUIRE_BODY, "locks"),  # join a key's line in the lock table
    "LOCK_RELEASE": ("lock_release", _LOCK_RELEASE_BODY, "locks"),  # leave it
}
# member: (stored value, whether its run is unclaimed: a cancel or pause may drop it)
RUN_STATES = {"WAITING_LOCK": ("waiting_lock", True)}  # a step with its own lock waiting for it (unit_locks.py)
RUN_TRANSITIONS = {"WAITING_LOCK": (
    ("pending", "waiting_lock"),  # its step's own lock first
    ("waiting_lock", "pending"),  # granted: published now
)}
# Its gates (a step's lock, a task's), by name: ("module:Class", its place in the registry's
# order, common.engine.registry.GATES).
GATES = {
    "step_lock": ("common.engine.gates.lock.step_gate:StepLockGate", 30),
    "lock": ("common.engine.gates.lock.gate:LockGate", 50),
}
