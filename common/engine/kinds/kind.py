"""What a kind of step is to the engine: the `StepKind` protocol (DESIGN.md sec. 14).

`common.engine.advance` starts a unit's run, concludes it and starts its rollback through the
kind of its step (common.engine.kinds.registry.kind_of), never by testing the step's fields, so a
new kind of step is one module with a class of this shape, and one line in the registry.
"""

from __future__ import annotations

from typing import Protocol

from common.engine.document import OutboxEntry, Run, Step, Task
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
