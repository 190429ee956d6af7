"""What a gate is to the engine: the `Gate` protocol (DESIGN.md sec. 14).

A gate holds a task's work back until something happens: its lock, another task's end, its
start time, an operator's resume; or ends it (a deadline). Routing asks every gate whether it
holds the task (common.engine.routing), `advance` when a dispatch may be due and whether the
task is past its time, and a unit's gates whether a new run waits for them instead of being
published (common.engine.advance.dispatch). A new gate is one module with a class of this shape
and one line in its registry (task_gates.py, or unit_gates.py for a unit's own).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Protocol

from common.engine.document import Run, Task


class Hold(IntEnum):
    """How much of a task's forward work a gate holds back."""

    NONE = 0
    STARTS = 1  # nothing new starts (a task whose every step is done still ends)
    ALL = 2  # nothing at all: whoever opens the gate advances the task


class Gate(Protocol):
    name: str

    def holds(self, task: Task) -> Hold:
        """How much of the task's forward work waits for this gate now."""

    def due(self, task: Task, now: float) -> float | None:
        """The earliest a dispatch may be due, or None when the gate has no say."""

    def expired(self, task: Task, now: float) -> str | None:
        """Why the task must roll back now (past its time), or None."""

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        """In place: a new normal run waits for this gate instead of being published."""


class OpenGate:
    """What a gate says about what it does not govern: subclasses override their part."""

    name = "open"

    def holds(self, task: Task) -> Hold:
        return Hold.NONE

    def due(self, task: Task, now: float) -> float | None:
        return None

    def expired(self, task: Task, now: float) -> str | None:
        return None

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        return False
