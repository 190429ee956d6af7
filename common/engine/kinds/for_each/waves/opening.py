"""Where a step's waves stand, moved in place by the wave changes (docs/design/waves.md): a wave
waits (a bake, a pause), the next one opens. Kept apart from the changes that route on
(waves/gate.py), so the kind and an operator's continue load no routing."""

from __future__ import annotations

from common.engine.codes import OutboxKind
from common.engine.core.units import Timing, record
from common.engine.document import OutboxEntry, Step, Task
from common.engine.kinds.for_each.waves.fields import PAUSED, RUNNING
from common.engine.kinds.for_each.waves.sizes import resize, spec_of, wave_count

RESUME_ITEMS = OutboxKind.RESUME_ITEMS  # its flusher starts each idle chain's next waiting item
WAVE_GATE = OutboxKind.WAVE_GATE
BATON = "baton"  # the actor of what a gate's own time decides


def _entry_id(task: Task, cursor: int, kind: str) -> str:
    from common.engine.kinds.for_each.records import entry_id  # a change's: a reader (baton get) loads none

    return entry_id(task, cursor, kind)


def where(step: Step) -> str:
    wave = step.Wave
    assert wave is not None
    count = wave_count(step)
    if count is None:
        return f"wave {wave.Index + 1}"  # a source's step whose count is not known yet
    return f"wave {wave.Index + 1} of {'about ' if step.Paging is not None and not step.Paging.Done else ''}{count}"


def wait(task: Task, cursor: int, phase: str, until: float | None, now: float) -> None:
    """In place: the wave waits in `phase` until `until` (None: for an operator only); the time
    is a stored entry, due then, that the sweeper acts on after a crash."""
    step = task.Steps[cursor]
    wave = step.Wave
    assert wave is not None
    wave.Phase, wave.Until = phase, until
    if until is not None:
        body = {"Cursor": cursor, "Generation": task.Generation, "Wave": wave.Index, "Phase": phase}
        entry = f"{_entry_id(task, cursor, WAVE_GATE)}:{wave.Index}:{phase}"
        task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=WAVE_GATE, Body=body, DueAt=until))
    if phase == PAUSED:
        record(task, now, "wave_paused", actor=BATON, unit=(cursor, None),
               message=f"{where(step)} ended: waits for an operator's continue")


def pause(task: Task, cursor: int, now: float) -> None:
    step = task.Steps[cursor]
    assert step.Wave is not None and step.Waves
    timeout = spec_of(step.Waves, step.Wave.Index).PauseTimeout
    wait(task, cursor, PAUSED, None if timeout is None else now + timeout, now)


def open_next(task: Task, cursor: int, timing: Timing, actor: str, reason: str) -> None:
    """In place: the next wave opens; the entry's flusher starts each idle chain's next item
    (a compare-and-set on each record: once), its id naming the wave."""
    step = task.Steps[cursor]
    wave = step.Wave
    assert wave is not None
    wave.Index, wave.Phase, wave.Until = wave.Index + 1, RUNNING, None
    resize(step)  # a source's step: the new wave's end, when its size can be known yet
    body = {"Cursor": cursor, "Generation": task.Generation}
    entry = f"{_entry_id(task, cursor, RESUME_ITEMS)}:wave{wave.Index}"
    task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=RESUME_ITEMS, Body=body, DueAt=timing.now))
    record(task, timing.now, "wave_started", actor=actor, unit=(cursor, None),
           message=f"{reason}; {where(step)}" if reason else where(step))
