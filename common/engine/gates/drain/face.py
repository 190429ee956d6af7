"""What of a module drain the engine's face offers outside code (common/engine/core/declared.py)."""

CHANGES = {"common.engine.gates.drain.changes": ("drain_hold", "release_hold")}
VIEWS = {"common.engine.gates.drain.gate": ("drain_wait",)}  # the derived wait of a drained run
