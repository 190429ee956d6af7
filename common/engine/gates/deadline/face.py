"""What of a task's deadline the engine's face offers outside code (common/engine/core/declared.py)."""

VIEWS = {"common.engine.gates.deadline.gate": ("overdue",)}
