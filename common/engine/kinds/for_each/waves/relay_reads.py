"""What the item relay needs to know of a step's waves to ask its records (docs/design/waves.md):
the open wave's items while it runs, and what a wave's check sees of an item. Pure."""

from __future__ import annotations

from typing import Any

from common.engine.document import ItemRecord, Task
from common.engine.kinds.for_each.waves.check import wants_check
from common.engine.kinds.for_each.waves.fields import RUNNING
from common.engine.kinds.for_each.waves.sizes import bounds
from common.engine.states import StepState

__all__ = ["WAVE_OPEN", "open_wave", "wave_chains", "wave_item", "wants_check"]

# In the order an item passes through them (a tolerated item rolls back going forward): an item
# that moves on between two look-ups is seen by the later one, as the step's own settling asks.
WAVE_OPEN = (StepState.WAITING, StepState.RUNNING, StepState.FAILED, StepState.ROLLING_BACK)


def open_wave(task: Task, cursor: int) -> tuple[int, int, int] | None:
    """The wave whose end is to be looked for, and its items [start, end): None when the step has
    no waves, its wave waits at a gate, it is the last one (the step settles), or the task is held."""
    wave = task.Steps[cursor].Wave
    if wave is None or wave.Phase != RUNNING or wave.Index == len(wave.Ends) - 1 or task.Held is not None:
        return None
    start, end = bounds(wave.Ends, wave.Index)
    return wave.Index, start, end


def wave_item(record: ItemRecord) -> dict[str, Any]:
    """One item as a wave's check sees it: its value, where it ended, its output or why it failed."""
    return {"Item": record.Item, "Value": record.Value, "State": record.State.value, "Output": record.Output,
            "Message": record.Message}


def wave_chains(task: Task, cursor: int, chains: int) -> list[int] | None:
    """The chains (item index modulo `chains`) that have items in the open wave: all a resume or a
    wave's opening needs to look at (a step without `max_parallel` has a chain per item, so
    looking at every chain would cost a look-up per item of the step). None: no waves."""
    wave = task.Steps[cursor].Wave
    if wave is None:
        return None
    start, end = bounds(wave.Ends, wave.Index)
    return sorted({item % chains for item in range(start, min(end, start + chains))})
