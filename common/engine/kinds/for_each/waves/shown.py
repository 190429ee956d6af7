"""A step's waves as every surface shows them in the step's line (the task view, `baton get`,
the console): which wave, what it waits for, and each ended wave's items done and failed."""

from __future__ import annotations

import datetime as dt

from collections.abc import Mapping, Sequence

from common.engine.kinds.for_each.budget import describe
from common.engine.kinds.for_each.budget import FAILED_FORWARD
from common.engine.kinds.for_each.waves.fields import BAKING, CHECKING, PAUSED, RUNNING, WaveSpecDoc, WaveState
from common.engine.states import StepState
from common.engine.document import Step
from common.engine.kinds.for_each.waves.sizes import OPEN_END, spec_of, wave_count, wave_ends


DONE = (StepState.SUCCEEDED.value, StepState.OPERATOR_SKIPPED.value)
FAILED = tuple(state.value for state in FAILED_FORWARD)


def _clock(when: float) -> str:
    return dt.datetime.fromtimestamp(when, dt.UTC).strftime("%H:%M:%S UTC")


def describe_wave(wave: WaveState, counts: Mapping[str, int] | None = None, step: Step | None = None) -> str:
    """"wave 2 of 4 ended (baking until 14:05:00 UTC; ended: 1 done, 10 done 1 failed)"; a wave
    running, with the step's items counted by state: "wave 3 of 4 (40/100 done, 1 failed; ...)".
    `step`: a source's step, whose count may not be known yet ("wave 2 of about 11", "wave 2")."""
    growing = step is not None and step.Paging is not None and not step.Paging.Done
    count = wave_count(step) if step is not None else len(wave.Ends)
    of = "" if count is None else f" of {'about ' if growing else ''}{count}"
    shown = f"wave {wave.Index + 1}{of}" + (" ended" if wave.Phase in (BAKING, CHECKING, PAUSED) else "")
    waits = []
    if wave.Phase == RUNNING and wave.Index >= len(wave.Ends):
        waits.append("waits for its source's count to be sized")
    elif wave.Phase == RUNNING and counts is not None:  # this wave's: the step's, less the waves before it
        done = sum(counts.get(state, 0) for state in DONE) - sum(t[0] for t in wave.Tallies)
        failed = sum(counts.get(state, 0) for state in FAILED) - sum(t[1] for t in wave.Tallies)
        start = wave.Ends[wave.Index - 1] if wave.Index else 0
        size = "?" if wave.Ends[wave.Index] == OPEN_END else wave.Ends[wave.Index] - start
        waits.append(f"{done}/{size} done" + (f", {failed} failed" if failed else ""))
    if wave.Phase == BAKING and wave.Until is not None:
        waits.append(f"baking until {_clock(wave.Until)}")
    elif wave.Phase == CHECKING:
        waits.append(f"checking: task {wave.Check}")
    elif wave.Phase == PAUSED:
        waits.append("waits for continue" + (f" until {_clock(wave.Until)}" if wave.Until is not None else ""))
    if wave.Tallies:
        waits.append("ended: " + ", ".join(f"{done} done" + (f" {failed} failed" if failed else "")
                                          for done, failed in wave.Tallies))
    return shown + (f" ({'; '.join(waits)})" if waits else "")


def _seconds(value: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


def plan_waves(waves: Sequence[WaveSpecDoc], item_count: int | None) -> list[str]:
    """Each wave as the dry-run plan says it: its size (items, once the count is known) and its gate."""
    ends = wave_ends(waves, item_count) if item_count is not None else None
    count = len(ends) if ends is not None else len(waves)
    shown = []
    for index in range(count):
        spec = spec_of(waves, index)
        if ends is not None:
            size = ends[index] - (ends[index - 1] if index else 0)
            said = f"{size} item{'s' if size != 1 else ''}"
        else:
            said = f"{spec.Size} item{'s' if spec.Size != 1 else ''}" if isinstance(spec.Size, int) else str(spec.Size)
        if spec.Tolerate is not None:
            said += f" (tolerates {describe(spec.Tolerate)})"
        if index < count - 1:
            if spec.Bake is not None:
                said += f", then bake {_seconds(spec.Bake)}"
            if spec.Check is not None:
                said += f", then check {spec.Check.Module}.{spec.Check.Command}"
            if spec.Pause:
                timeout = f" (at most {_seconds(spec.PauseTimeout)}, then {spec.OnTimeout or 'continue'})" \
                    if spec.PauseTimeout is not None else ""
                said += f", then pause for continue{timeout}"
        shown.append(said)
    return shown
