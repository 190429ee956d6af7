"""The waves of a `for_each` step as an extension of the kind (docs/design/kind-extensions.md):
what the kind, its item records and its budget ask of them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from common.engine.core.units import Refusal, Timing, record
from common.engine.document import OperatorRequest, OutboxEntry, Step, Task
from common.engine.kinds.for_each.extending import ForEachExtension
from common.engine.kinds.for_each.waves import budget
from common.engine.kinds.for_each.waves.act import ACTION, continue_wave, waits_for_continue
from common.engine.kinds.for_each.waves.cancel import cancel_check
from common.engine.kinds.for_each.waves.shown import describe_wave
from common.engine.kinds.for_each.waves.sizes import bounds, fix_waves, may_start, resize
from common.engine.kinds.kind import ActRequest


class WavesExtension(ForEachExtension):
    order = 10  # a check cancelled before a source stops fetching, as the task turns backward
    actions = (ACTION,)  # a paused wave's continue

    def opened(self, step: Step) -> None:
        fix_waves(step)  # the first wave's end, when its size can be known (a source's: before any page)

    def needs_records(self, step: Step) -> bool:
        return bool(step.Waves)

    def count_known(self, task: Task, cursor: int, now: float, final: bool) -> None:
        """The waves the count now known fixes (docs/design/waves.md, "Waves over a source"); a
        page that sizes an open wave that waited for its size starts its chains (an entry, as
        its opening)."""
        step = task.Steps[cursor]
        if not resize(step) or final:
            return
        from common.engine.kinds.for_each.records import entry_id  # a change's: a reader loads none
        from common.engine.kinds.for_each.waves.opening import RESUME_ITEMS, where

        assert step.Wave is not None
        entry = f"{entry_id(task, cursor, RESUME_ITEMS)}:wave{step.Wave.Index}:sized"
        body = {"Cursor": cursor, "Generation": task.Generation}
        task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=RESUME_ITEMS, Body=body, DueAt=now))
        start, end = bounds(step.Wave.Ends, step.Wave.Index)
        record(task, now, "wave_sized", actor="baton", unit=(cursor, None), message=f"{where(step)}: {end - start} items")

    def item_may_start(self, step: Any, item: int) -> bool:
        return may_start(step, item)

    def has_budget(self, step: Step, item: int) -> bool:
        return budget.wave_budget(step, item) is not None

    def refuses_place(self, step: Step, item: int, taken: list[int]) -> str | None:
        return budget.refuses_wave_place(step, item, taken)

    def child_ended(self, task: Task, body: dict[str, Any], timing: Timing,
                    ids: Callable[[], str]) -> Task | Refusal | None:
        from common.engine.kinds.for_each.waves.check import check_finished, is_wave_check  # a change's

        return check_finished(task, body, timing, ids) if is_wave_check(task, body) else None

    def waits_unparked(self, task: Task, cursor: int) -> bool:
        return waits_for_continue(task, cursor)

    def act_unparked(self, task: Task, cursor: int, action: str, request: ActRequest, timing: Timing,
                     ids: Callable[[], str]) -> Refusal | None:
        return continue_wave(task, cursor, request, timing, ids)

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        if task.Steps[cursor].Wave is not None:  # a wave's check running: cancelled (a cancel's did it already)
            asked = task.CancelRequested
            actor, reason = (asked.Actor, asked.Reason) if asked is not None else ("baton", task.TaskMessage or "backward")
            cancel_check(task, cursor, actor, reason, now)

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        if task.Steps[cursor].Wave is not None:  # its check is the step's running work now
            cancel_check(task, cursor, request.Actor, request.Reason, request.Time, stop_running)

    def reset(self, step: Step) -> None:
        step.Wave = None  # a new generation's waves start again at the first

    def describe_more(self, step: Step, counts: Mapping[str, int] | None) -> dict[str, str]:
        wave = describe_wave(step.Wave, counts, step) if step.Wave is not None else None
        return {"wave": wave} if wave is not None else {}


EXTENSION = WavesExtension()
