"""What of a for_each step's waves the engine's face offers outside code (common/engine/core/declared.py)."""

DOCUMENT = {"common.engine.kinds.for_each.waves.fields": ("WaveSpecDoc",)}
# A wave's end, and its gate's time (a bake's end, a pause's timeout).
CHANGES = {"common.engine.kinds.for_each.waves.gate": ("wave_ended", "wave_gate_due")}
# What the relay asks of a wave's records, what a plan says of a step's waves.
VIEWS = {
    "common.engine.kinds.for_each.waves.relay_reads": (
        "CHECK_ITEMS", "FAILED_FORWARD", "WAVE_OPEN", "check_items", "open_wave", "pages_in", "wave_chains",
        "wave_count", "wave_item", "wants_check",
    ),
    "common.engine.kinds.for_each.waves.shown": ("plan_waves",),
}
