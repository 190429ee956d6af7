"""What the freeze gate adds to the engine's shared tables (common/engine/core/declared.py): its
wait. Read as common.engine.codes, states and outbox are built, so it imports nothing."""

# member: (stored value, its place among the stored waits: the order a task meets them as it is
# created, the registry's order of the gates; a wait may give way to one placed after it)
WAITS = {"FREEZE": ("freeze", 10)}  # a freeze window's end (common.engine.gates.freeze.gate)
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "freeze": ("common.engine.gates.freeze.gate:FreezeGate", 10),
}
