"""What the item relay needs to know of a step's waves to ask its records (docs/design/waves.md):
the open wave's items while it runs, and what a wave's check sees of an item. Pure."""

from __future__ import annotations

from typing import Any

from common.engine.document import ItemRecord, Task
from common.engine.kinds.for_each.waves.check import CHECK_ITEMS, wants_check
from common.engine.kinds.for_each.waves.fields import RUNNING
from common.engine.kinds.for_each.budget import FAILED_FORWARD
from common.engine.kinds.for_each.waves.sizes import bounds, growing, is_last, wave_count
from common.engine.states import StepState

__all__ = ["CHECK_ITEMS", "FAILED_FORWARD", "WAVE_OPEN", "check_items", "open_wave", "pages_in", "wave_chains",
           "wave_count", "wave_item", "wants_check"]

# In the order an item passes through them (a tolerated item rolls back going forward): an item
# that moves on between two look-ups is seen by the later one, as the step's own settling asks.
WAVE_OPEN = (StepState.WAITING, StepState.RUNNING, StepState.FAILED, StepState.ROLLING_BACK)


def open_wave(task: Task, cursor: int) -> tuple[int, int, int] | None:
    """The wave whose end is to be looked for, and its items [start, end): None when the step has
    no waves, its wave waits at a gate, it is the last one (the step settles), the task is held,
    or (a source's step) its items are not all fetched yet, or it is not sized yet."""
    step = task.Steps[cursor]
    wave = step.Wave
    if wave is None or wave.Phase != RUNNING or is_last(step) or task.Held is not None:
        return None
    if wave.Index >= len(wave.Ends) or (growing(step) and wave.Ends[wave.Index] > step.Paging.Fetched):
        return None  # items of it are still to come: their pages are on their way
    start, end = bounds(wave.Ends, wave.Index)
    return wave.Index, start, end


def pages_in(task: Task, cursor: int, start: int, end: int) -> list[int]:
    """For each page fixed in the task whose records may not be inserted yet (its `open_items`
    entry still in the outbox) and that reaches into [start, end): its last index in it. Its
    records are inserted in index order: once that one is stored, the page's part of the wave is."""
    from common.engine.codes import OutboxKind  # a reader of a source's step only

    last = []
    for entry in task.Outbox:
        body = entry.Body
        if entry.Kind != OutboxKind.OPEN_ITEMS or body.get("Cursor") != cursor or body.get("Generation") != task.Generation:
            continue
        first = body.get("From") or 0
        stop = min(first + len(body.get("Values") or ()), end)
        if first < stop and stop > start:
            last.append(stop - 1)
    return last


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
    if wave.Index >= len(wave.Ends):
        return []  # not sized yet: none of its items may start
    start, end = bounds(wave.Ends, wave.Index)
    return sorted({item % chains for item in range(start, min(end, start + chains))})


def check_items(failed: list[ItemRecord], first: list[ItemRecord], limit: int) -> list[dict[str, Any]]:
    """What a wave's check sees in its `items` (docs/design/waves.md, "A wave's check"): the
    failed items first (`failed`, in item order), then the others of `first` (the wave's first
    records), at most `limit` in all."""
    shown = [wave_item(record) for record in failed[:limit]]
    taken = {record.Item for record in failed}
    for record in first:
        if len(shown) >= limit:
            break
        if record.Item not in taken:
            shown.append(wave_item(record))
    return shown
