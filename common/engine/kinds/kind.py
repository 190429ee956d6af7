"""What a kind of step is to the engine: the `StepKind` protocol (DESIGN.md sec. 14).

`common.engine.advance` starts a unit's run, concludes it and starts its rollback through the
kind of its step (common.engine.kinds.registry.kind_of), and the operator's cancel, pause, resume
skip, retry-rollback and compensate (common.engine.operator) ask it what they mean for its steps, never by testing the step's
fields, so a new kind of step is one module with a class of this shape, and one line in the
registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from common.engine.document import OperatorRequest, OutboxEntry, Run, Step, Task
from common.engine.routing import Unit
from common.engine.units import Timing


class StepKind(Protocol):
    name: str
    # Whether the gates of a unit (a step's own lock) may hold this kind's runs.
    unit_gated: bool

    def runs(self, step: Step) -> bool:
        """This kind runs `step`."""

    def run_deadline(self, timing: Timing, due_at: float) -> float | None:
        """The deadline a new run gets (when the sweeper looks at it again), or None."""

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> OutboxEntry:
        """In place: the new `run` begins; returns what it owes (a message, a child's creation)."""

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        """In place: what the run's end needs recorded first."""

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        """In place: start the unit's rollback the kind's own way; False: dispatch a rollback run."""

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        """In place: an operator's cancel of the task, for this kind's claimed `run`, the kind's
        own way; False: the engine's (the run finishes, or a cancel that stops running runs
        removes it)."""

    def cancel_step(self, task: Task, cursor: int, request: OperatorRequest, stop_running: bool) -> None:
        """In place: what an operator's cancel does to step `cursor` beyond its runs in the task
        (the runs of items kept in records of their own: withdrawn, and stopped with
        `stop_running`)."""

    def reopen_rollback(self, task: Task, unit: Unit, action: str, request: OperatorRequest,
                        ids: Callable[[], str]) -> bool:
        """In place: an operator's retry-rollback (`action` "retry") or compensate ("compensate")
        of `unit`, whose rollback failed, the kind's own way; False: the engine's (the unit's
        rollback is dispatched again, or the unit marked compensated)."""

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        """In place: what an operator's pause of the task does to step `cursor` beyond the
        task's own `Paused` (which holds every new unit back)."""

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        """In place: what an operator's resume does to step `cursor` beyond clearing `Paused`."""

    def skip_refused(self, task: Task, run: Run) -> str | None:
        """Why an operator may not skip the unit of this kind's failing `run`, or None: they may."""

    def item_count(self, step: Step) -> int:
        """How many items the step fans out over (0: none fixed yet, or not a for_each step)."""

    def item_skip_elsewhere(self, cursor: int, item: int) -> str | None:
        """Why item `item` of step `cursor` is not skipped by a change of the task (it is kept
        apart, and skipped by a change of its own), or None: the task holds it."""
