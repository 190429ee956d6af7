"""What the sub-flow kind adds to the engine's shared tables (common/engine/core/declared.py): the
entries between a parent and its child, and a run its child runs."""

_CHILD_ACTION_BODY = "common.engine.kinds.sub_flow.bodies:ChildActionBody"
_CHILD_FINISHED_BODY = "common.engine.kinds.sub_flow.bodies:ChildFinishedBody"
_START_CHILD_BODY = "common.engine.kinds.sub_flow.bodies:StartChildBody"
_UNDO_CHILD_BODY = "common.engine.kinds.sub_flow.bodies:UndoChildBody"

# member: (stored value, its body, who flushes it: a change of another task, common.relay.child_relay)
OUTBOX_KINDS = {
    "START_CHILD": ("start_child", _START_CHILD_BODY, "children"),  # create a sub-flow's child task
    "UNDO_CHILD": ("undo_child", _UNDO_CHILD_BODY, "children"),  # roll the child back
    "CANCEL_CHILD": ("cancel_child", _CHILD_ACTION_BODY, "children"),
    "PAUSE_CHILD": ("pause_child", _CHILD_ACTION_BODY, "children"),
    "RESUME_CHILD": ("resume_child", _CHILD_ACTION_BODY, "children"),
    "CHILD_FINISHED": ("child_finished", _CHILD_FINISHED_BODY, "children"),  # tell the parent how its child ended
}
# member: (stored value, whether its run is unclaimed)
RUN_STATES = {"WAITING_CHILD": ("waiting_child", False)}  # a sub-flow step waiting for its child task to end
RUN_TRANSITIONS = {"WAITING_CHILD": (("pending", "waiting_child"),)}  # its child task runs it
# Its kind, by name: ("module:Class", its place in the registry's order, common.engine.registry.KINDS).
KINDS = {"sub_flow": ("common.engine.kinds.sub_flow.kind:SubFlowKind", 30)}
