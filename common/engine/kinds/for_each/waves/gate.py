"""The changes of a step's waves (docs/design/waves.md): a wave ends, its gate's time comes (a
bake's end, a pause's timeout), the gate fails the step. Each is a pure `Task -> Task | Refusal` written with one
compare-and-set on the task, refused unless the step is still where the change was decided: so a
wave ends once and opens once, whoever repeats the change (a second item, the sweeper's relay,
a second operator)."""

from __future__ import annotations

from collections.abc import Mapping

from common.engine.core.units import IdFactory, Refusal, Timing, record
from common.engine.document import Task
from common.engine.kinds.for_each.budget import failed_forward
from common.engine.kinds.for_each.item_changes import going_forward
from common.engine.kinds.for_each.waves.check import start_check
from common.engine.kinds.for_each.waves.failing import fail
from common.engine.kinds.for_each.waves.fields import BAKING, PAUSED, RUNNING
from common.engine.kinds.for_each.waves.opening import BATON, open_next, pause, wait, where
from common.engine.kinds.for_each.waves.sizes import growing, is_last, spec_of
from common.engine.states import StepState


def wave_ended(task: Task, cursor: int, index: int, counts: Mapping[StepState, int], timing: Timing, actor: str,
               ids: IdFactory, wave_items: list[dict] | None = None) -> Task | Refusal:
    """Every item of wave `index` ended (`counts`: the step's items by state, read after): its
    tally is kept and its gate decides what comes next (`wave_items`: what its check sees)."""
    step = task.Steps[cursor]
    wave = step.Wave
    if wave is None or wave.Index != index or wave.Phase != RUNNING:
        return Refusal("the wave ended already")
    if is_last(step):
        return Refusal("the last wave: the step settles")
    if index >= len(wave.Ends) or (growing(step) and wave.Ends[index] > step.Paging.Fetched):
        return Refusal("items of the wave are still to come from its source")
    if not going_forward(task) or task.Held is not None or step.State is not StepState.RUNNING:
        return Refusal("the step does not go forward now")
    new = task.clone()
    step = new.Steps[cursor]
    wave = step.Wave
    assert wave is not None and step.Waves
    done = counts.get(StepState.SUCCEEDED, 0) + counts.get(StepState.OPERATOR_SKIPPED, 0)
    failed = failed_forward(counts)
    tally = [done - sum(t[0] for t in wave.Tallies), failed - sum(t[1] for t in wave.Tallies)]
    wave.Tallies.append(tally)
    record(new, timing.now, "wave_ended", actor=actor, unit=(cursor, None),
           message=f"{where(step)}: {tally[0]} done, {tally[1]} failed")
    gate = spec_of(step.Waves, index)
    if gate.Bake is not None:
        wait(new, cursor, BAKING, timing.now + gate.Bake, timing.now)
    elif gate.Check is not None:
        start_check(new, cursor, wave_items or [], timing.now)
    elif gate.Pause:
        pause(new, cursor, timing.now)
    else:
        open_next(new, cursor, timing, actor, "")
    return new


def wave_gate_due(task: Task, cursor: int, index: int, phase: str, timing: Timing, ids: IdFactory,
                  wave_items: list[dict] | None = None) -> Task | Refusal:
    """A wave's bake ended or its pause timed out (the `wave_gate` entry came due): the gate goes
    on. Refused when the step moved on since (an operator continued, the task went backward)."""
    step = task.Steps[cursor]
    wave = step.Wave
    if wave is None or wave.Index != index or wave.Phase != phase or wave.Until is None:
        return Refusal("the wave moved on since")
    if wave.Until > timing.now:
        return Refusal("not due yet")
    if not going_forward(task) or step.State is not StepState.RUNNING:
        return Refusal("the step does not go forward now")
    new = task.clone()
    step = new.Steps[cursor]
    assert step.Waves is not None
    gate = spec_of(step.Waves, index)
    if phase == BAKING and gate.Check is not None:
        start_check(new, cursor, wave_items or [], timing.now)
    elif phase == BAKING and gate.Pause:
        pause(new, cursor, timing.now)
    elif phase == PAUSED and gate.OnTimeout == "fail":
        fail(new, cursor, f"{where(step)}: nobody continued before its pause's timeout", timing, ids)
    else:
        why = "bake ended" if phase == BAKING else "pause timed out: continued"
        open_next(new, cursor, timing, BATON, why)
    return new
