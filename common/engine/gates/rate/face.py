"""What of the rate gate the engine's face offers outside code (common/engine/core/declared.py)."""

DOCUMENT = {"common.engine.gates.rate.documents": ("KeyRate", "RateStart", "RateTemplate", "TaskRate")}
# A slot taken or deferred, a task's or a step's; the window's decision, which the rate table applies.
CHANGES = {
    "common.engine.gates.rate.changes": ("rate_deferred", "rate_taken"),
    "common.engine.gates.rate.unit_rate": ("unit_rate_deferred", "unit_rate_taken"),
    "common.engine.gates.rate.window": ("Full", "Taken", "member_of", "take"),
}
# A declared rate's template, what a task's rate asks for and says, a plan's free slots.
VIEWS = {
    "common.engine.gates.rate.spec": ("rate_template",),
    "common.engine.gates.rate.task_rate": ("RateAsk", "per_text"),
    "common.engine.gates.rate.window": ("slots_left",),
}
