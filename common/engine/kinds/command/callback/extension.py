"""A command's callbacks as an extension of the command kind (docs/design/callbacks.md): its
answer "wait for a callback" parks the run, which times out, is shown and spends its token its
own way."""

from __future__ import annotations

from common.engine.core.units import AttemptResult, Timing
from common.engine.document import Run, Step, Task
from common.engine.kinds.command.callback import wait as callback
from common.engine.kinds.command.extending import CommandExtension
from common.engine.states import Phase, RunState


class CallbackExtension(CommandExtension):
    awaits_outside = True

    def await_outside(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> AttemptResult | None:
        return callback.park(task, run, result, timing.now, actor)

    def lease_lapsed(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        return callback.kept_outcome(task, run, timing.now)  # the other system did what the command started

    def lapse(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        return callback.lapse(task, run, timing.now) if run.Callback is not None else None  # the timeout, or a missed heartbeat

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        callback.spend(task, run, "ended", timing.now)  # unless spent already, with its answer

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        for run in task.Runs:  # a parked callback of this step is fenced now: its token is spent
            if run.Cursor == cursor and run.State is RunState.PARKED and run.Phase is Phase.NORMAL:
                callback.spend(task, run, "ended", now)

    def describe_wait(self, step: Step, run: Run) -> str | None:
        return callback.describe(run) if run.Callback is not None else None


EXTENSION = CallbackExtension()
