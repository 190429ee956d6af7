"""The hooks a command step's extensions answer (its callbacks: a folder of command/ with an
`extension.py`), and the extensions found. The command kind asks each in turn and names none
(docs/design/kind-extensions.md). The defaults change nothing."""

from __future__ import annotations

from collections.abc import Callable

from common.engine.core.units import AttemptResult, Timing
from common.engine.document import Run, Step, Task
from common.engine.kinds.extension import KindExtension, lazily


class CommandExtension(KindExtension):
    # Whether it answers a command's "wait outside the flow" (`await_outside`): the first that does.
    awaits_outside = False

    def await_outside(self, task: Task, run: Run, result: AttemptResult, timing: Timing, actor: str) -> AttemptResult | None:
        """In place: the run's command answered "wait for a callback". None: the run is parked;
        else the outcome to conclude it with."""
        raise NotImplementedError

    def lease_lapsed(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        """In place: the outcome a claimed run whose lease lapsed ends with (an answer kept for
        it), or None: none of its own."""
        return None

    def lapse(self, task: Task, run: Run, timing: Timing) -> AttemptResult | None:
        """How a parked run it parked ends when its deadline passes, or None: not its run."""
        return None

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        return None

    def on_backward(self, task: Task, cursor: int, now: float) -> None:
        return None

    def describe_wait(self, step: Step, run: Run) -> str | None:
        """What a run it parked waits for, or None: not its run."""
        return None


extensions: Callable[[], tuple[CommandExtension, ...]] = lazily("common.engine.kinds.command")
