"""What the deadline gate adds to the engine's shared tables (common/engine/core/declared.py): its
gate. Read as the registry is built, so it imports nothing."""

# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "deadline": ("common.engine.gates.deadline.gate:DeadlineGate", 90),
}
