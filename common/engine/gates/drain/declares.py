"""What the drain gate adds to the engine's shared tables (common/engine/core/declared.py): its
wait. Read as common.engine.codes, states and outbox are built, so it imports nothing."""

# A module's undrain (common.engine.gates.drain.gate): shown for a task whose run a drained module
# holds, derived from the runs and never stored in the document.
DERIVED_WAITS = {"DRAIN": "drain"}
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "drain": ("common.engine.gates.drain.gate:DrainGate", 100),
}
