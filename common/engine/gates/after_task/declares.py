"""What the after-task gate adds to the engine's shared tables (common/engine/core/declared.py):
its wait, and the entry that wakes it. Read as common.engine.codes, states and outbox are built,
so it imports nothing: its entries' bodies (bodies.py) are named, not imported."""

_TASK_FINISHED_BODY = "common.engine.gates.after_task.bodies:TaskFinishedBody"

WAITS = {"TASK": ("task", 20)}  # another task's end (common.engine.gates.after_task.gate)
# member: (stored value, its body, who flushes it: a change of another task)
OUTBOX_KINDS = {"TASK_FINISHED": ("task_finished", _TASK_FINISHED_BODY, "children")}  # wake a task that waits for this one
# Its gate, by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "after_task": ("common.engine.gates.after_task.gate:AfterTaskGate", 20),
}
