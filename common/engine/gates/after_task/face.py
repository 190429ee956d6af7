"""What of a wait for another task the engine's face offers outside code (common/engine/core/declared.py)."""

CHANGES = {"common.engine.gates.after_task.changes": ("awaited_finished", "listen_for", "recheck_later")}
