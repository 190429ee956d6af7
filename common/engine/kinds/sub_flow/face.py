"""What of the sub-flow kind the engine's face offers outside code (common/engine/core/declared.py)."""

# A child task's start, end and undoing.
CHANGES = {
    "common.engine.kinds.sub_flow.changes": ("child_finished", "start_child", "undo"),
    "common.engine.kinds.sub_flow.entries": ("child_finished_entry",),
}
VIEWS = {"common.engine.kinds.sub_flow.entries": ("child_outcome", "child_task_id")}
