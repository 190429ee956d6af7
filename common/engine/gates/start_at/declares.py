"""What the start-at gate adds to the engine's shared tables (common/engine/core/declared.py): its
wait. Read as common.engine.codes, states and outbox are built, so it imports nothing."""

# A delayed start (common.engine.gates.start_at.gate): shown for a task whose first runs wait for
# `StartAt`, derived and never stored.
DERIVED_WAITS = {"START_AT": "start_at"}
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "start_at": ("common.engine.gates.start_at.gate:StartAtGate", 80),
}
