"""What of a freeze window the engine's face offers outside code (common/engine/core/declared.py)."""

CHANGES = {"common.engine.gates.freeze.changes": ("freeze_ended",)}
VIEWS = {"common.engine.gates.freeze.window": ("thawed", "utc_text")}  # a window's end
