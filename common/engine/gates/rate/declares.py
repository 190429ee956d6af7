"""What the rate gate adds to the engine's shared tables (common/engine/core/declared.py): its
wait, the entry its table's relay carries, and a step's run waiting for a slot. Read as
common.engine.codes, states and outbox are built, so it imports nothing: its entries' bodies
(bodies.py) are named, not imported."""

_RATE_TAKE_BODY = "common.engine.gates.rate.bodies:RateTakeBody"

WAITS = {"RATE": ("rate", 40)}  # a start slot of its rate (common.engine.gates.rate.gate)
FLUSHERS = {"RATES": "rates"}  # a slot taken in the rate table (common.store.gates.rate.relay)
# take a slot of a key's rate, or learn when the next one frees
OUTBOX_KINDS = {"RATE_TAKE": ("rate_take", _RATE_TAKE_BODY, "rates")}
# member: (stored value, whether its run is unclaimed: a cancel or pause may drop it)
RUN_STATES = {"WAITING_RATE": ("waiting_rate", True)}  # a step with its own rate waiting for a slot (unit_rate.py)
RUN_TRANSITIONS = {"WAITING_RATE": (
    ("pending", "waiting_rate"),  # its step's own rate first
    ("waiting_rate", "pending"),  # a slot taken: published now
)}
# Its gates (a task's rate, a step's), by name: ("module:Class", its place in the registry's order, common.engine.registry.GATES).
GATES = {
    "step_rate": ("common.engine.gates.rate.step_gate:StepRateGate", 40),
    "rate": ("common.engine.gates.rate.gate:RateGate", 60),
}
