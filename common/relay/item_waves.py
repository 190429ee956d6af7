"""The item relay's part for a step's waves (docs/design/waves.md): after an item ends, whether
its wave ended (no record of it open forward), and the `wave_gate` entry (a bake's end, a
pause's timeout). A mixin of common.relay.items.ItemRelay, whose reads and writes it uses."""

from __future__ import annotations

from typing import Any

import structlog

from common.engine.changes import Refusal, wave_ended, wave_gate_due
from common.engine.document import ItemRecord, Task
from common.engine.views import CHECK_ITEMS, FAILED_FORWARD, WAVE_OPEN, check_items, open_wave, pages_in, wants_check, wave_count
from common.relay.item_relay_part import RelayPart

log = structlog.get_logger(__name__)


class WaveEntries(RelayPart):
    def _first_in(self, task: Task, cursor: int, start: int, end: int, states: Any, limit: int = 1) -> list[ItemRecord]:
        found = self._items.page_items(task.TaskId, task.Generation, cursor, after=start - 1 if start else None,
                                       limit=limit, states=states)
        return [record for record in found if record.Item < end]

    def check_wave_ended(self, task_id: str, cursor: int) -> None:
        """End the open wave once none of its items has work left forward (each item writes its
        record before it asks: the later of two ending together sees both)."""
        task = self._reads.get(task_id)
        found = open_wave(task, cursor) if task is not None else None
        if found is None:
            return
        index, start, end = found
        for last in pages_in(task, cursor, start, end):  # a page fixed, its records not all inserted yet
            if self._items.get_item(task_id, task.Generation, cursor, last) is None:
                return  # its items never ran: theirs is the ask that ends the wave
        for state in WAVE_OPEN:
            if self._first_in(task, cursor, start, end, [state]):
                return
        counts = self._items.count_by_state(task_id, task.Generation, cursor)
        seen = self._wave_items(task, cursor, start, end)
        changed = self._write_task(task_id, lambda t: wave_ended(t, cursor, index, counts, self._timing(), "relay",
                                                                 self._ids, seen))
        if not isinstance(changed, Refusal):
            wave = changed.Steps[cursor].Wave
            log.info("wave ended", task_id=task_id, step=cursor, wave=index + 1, waves=wave_count(changed.Steps[cursor]),
                     phase=wave.Phase, done=wave.Tallies[-1][0], failed=wave.Tallies[-1][1])
            self._flush_task(changed)

    def _wave_items(self, task: Task, cursor: int, start: int, end: int) -> list[dict] | None:
        """The wave's items as its check sees them, read only when its gate runs a check."""
        if not wants_check(task.Steps[cursor]):
            return None
        failed = self._first_in(task, cursor, start, end, FAILED_FORWARD, CHECK_ITEMS)
        first = self._first_in(task, cursor, start, end, None, min(end - start, CHECK_ITEMS + len(failed)))
        return check_items(failed, first, CHECK_ITEMS)

    def _wave_gate(self, task: Task, cursor: int, body: dict) -> None:
        wave = task.Steps[cursor].Wave
        seen = None
        if wave is not None and wave.Index == body["Wave"] and wave.Index < len(wave.Ends):
            start = wave.Ends[wave.Index - 1] if wave.Index else 0
            seen = self._wave_items(task, cursor, start, wave.Ends[wave.Index])
        changed = self._write_task(task.TaskId, lambda t: wave_gate_due(t, cursor, body["Wave"], body["Phase"],
                                                                        self._timing(), self._ids, seen))
        if not isinstance(changed, Refusal):
            log.info("wave gate due", task_id=task.TaskId, step=cursor, wave=body["Wave"] + 1, phase=body["Phase"])
            self._flush_task(changed)

