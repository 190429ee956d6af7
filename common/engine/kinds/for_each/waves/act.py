"""An operator's `continue` of a step whose wave is paused (docs/design/waves.md, "Continue"):
the next wave opens. One compare-and-set on the task: of two operators at once, the second reads
the wave open already and is refused."""

from __future__ import annotations

from common.engine.core.units import Forbidden, IdFactory, Refusal, Timing, record
from common.engine.document import Task
from common.engine.kinds.for_each.item_changes import going_forward
from common.engine.kinds.for_each.waves.fields import PAUSED
from common.engine.kinds.for_each.waves.opening import open_next, where
from common.engine.kinds.kind import ActRequest, StepAction

CONTINUE = "continue"
ACTION = StepAction(CONTINUE, "Continue", "The paused wave's gate lets the next wave start")
OPERATOR = "operator"


def waits_for_continue(task: Task, cursor: int) -> bool:
    wave = task.Steps[cursor].Wave
    return wave is not None and wave.Phase == PAUSED and going_forward(task)


def continue_wave(task: Task, cursor: int, request: ActRequest, timing: Timing, ids: IdFactory) -> Refusal | None:
    """In place: open the next wave, recorded with who and why; why not, or None."""
    step = task.Steps[cursor]
    if OPERATOR not in request.roles:
        return Forbidden(f"{request.actor} may not continue {step.Name}: it needs a token of role operator")
    if not request.reason.strip():
        return Refusal("continue needs a reason: it goes into the task's history")
    if not waits_for_continue(task, cursor):
        shown = f"{where(step)} is {step.Wave.Phase}" if step.Wave is not None else "it has no waves"
        return Refusal(f"step {step.Name} waits for no continue now ({shown})")
    record(task, request.time, "wave_continued", actor=request.actor, unit=(cursor, None), message=request.reason)
    open_next(task, cursor, timing, request.actor, request.reason)
    return None
