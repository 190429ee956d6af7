"""What of the step lock gate the engine's face offers outside code (common/engine/core/declared.py)."""

CHANGES = {"common.engine.gates.step_lock.unit_locks": ("unit_lock_granted",)}
VIEWS = {"common.engine.gates.step_lock.unit_locks": ("parse_member", "unit_lock")}  # a step lock's member
