"""A command step: its run is a message on its module's queue, claimed by a worker. The base
class's answers are a command's (common.engine.kinds.kind.StepKind); what its extensions add (a
run whose command waits for a callback: parked, it times out, is shown and is spent its own way)
they answer through the hooks of command/extending.py."""

from __future__ import annotations

from common.engine.core.units import AttemptResult, Timing
from common.engine.document import Run, Step, Task
from common.engine.kinds.command.extending import extensions
from common.engine.kinds.command.spec import CommandPart
from common.engine.kinds.kind import StepKind


class CommandKind(StepKind):
    name = "command"
    spec = CommandPart()

    def await_outside(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> AttemptResult | None:
        own = next((extension for extension in extensions() if extension.awaits_outside), None)
        if own is None:
            return super().await_outside(task, run, result, timing, actor)
        return own.await_outside(task, run, result, timing, actor)

    def lease_lapsed(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        return next((kept for extension in extensions()
                     if (kept := extension.lease_lapsed(task, run, timing)) is not None), None)

    def lapse(self, task: Task, run: Run, timing: Timing) -> AttemptResult:
        own = next((ended for extension in extensions() if (ended := extension.lapse(task, run, timing)) is not None), None)
        return own if own is not None else super().lapse(task, run, timing)

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        for extension in extensions():
            extension.before_conclude(task, run, timing)

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        for extension in extensions():
            extension.on_backward(task, cursor, now)

    def describe_wait(self, step: Step, run: Run) -> str:
        own = next((text for extension in extensions() if (text := extension.describe_wait(step, run)) is not None), None)
        return own if own is not None else super().describe_wait(step, run)
