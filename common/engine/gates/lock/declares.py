"""What the lock gate adds to the engine's shared tables (common/engine/core/declared.py): its
wait, and the entries its table's relay carries. Read as common.engine.codes, states and outbox
are built, so it imports nothing: its entries' bodies (bodies.py) are named, not imported."""

_LOCK_ACQUIRE_BODY = "common.engine.gates.lock.bodies:LockAcquireBody"
_LOCK_RELEASE_BODY = "common.engine.gates.lock.bodies:LockReleaseBody"

WAITS = {"LOCK": ("lock", 30)}  # a slot of its lock (common.engine.gates.lock.gate)
FLUSHERS = {"LOCKS": "locks"}  # a change of the lock table (common.store.gates.lock.relay)
OUTBOX_KINDS = {
    "LOCK_ACQUIRE": ("lock_acquire", _LOCK_ACQUIRE_BODY, "locks"),  # join a key's line in the lock table
    "LOCK_RELEASE": ("lock_release", _LOCK_RELEASE_BODY, "locks"),  # leave it
}
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "lock": ("common.engine.gates.lock.gate:LockGate", 50),
}
