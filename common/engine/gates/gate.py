"""What a gate is to the engine: the `Gate` base class (docs/design/gates.md, "A gate is a folder
with a lifecycle").

A gate holds a task's work back until something happens: its lock, another task's end, its start
time, a freeze window's end, an operator's resume; or ends it (a deadline). Routing asks every
gate whether it holds the task, `advance` when a dispatch may be due, whether the task is past its
time and whether a unit's new run waits for it; `create_task` hands each gate the submission's
ask of it and opens them in turn; `advance` lets each gate release what a unit holds and end its
part of a task. The registry (common.engine.registry.GATES) lists the gates in the one order every
hook is called in. The defaults here govern nothing: a gate overrides only its part.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from common.engine.codes import WaitKind
from common.engine.core.units import Unit
from common.engine.document import Run, Task, WaitCondition
from common.spec.parts import FlowsPart


class Hold(IntEnum):
    """How much of a task's forward work a gate holds back."""

    NONE = 0
    STARTS = 1  # nothing new starts (a task whose every step is done still ends)
    ALL = 2  # nothing at all: whoever opens the gate advances the task


@dataclass(frozen=True)
class PlanPart:
    """A gate folder's part of a dry run's plan (its `plan.py`'s PLAN_PART: common.engine.core.plan_parts)."""

    fields: dict[str, Any]  # a value for each of its folder's PLAN_FIELDS
    # It holds the start first: (its `when`, as its shown.py's PLAN_START, why in words).
    holds: tuple[str, str] | None = None
    warnings: tuple[str, ...] = ()  # what would make the task wait or fail if it ran now


class Gate:
    name = "open"
    # The keyword of create_task that carries a submission's ask of this gate (None: it takes none).
    asks: str | None = None
    # What its wait shows as in `WaitingFor` (None: it never waits there).
    wait_kind: WaitKind | None = None
    # Its part of flows.yaml (None: it has no key there): the keys it owns, their checks.
    spec: FlowsPart | None = None

    # --- asked on every change -------------------------------------------------------------------

    def holds(self, task: Task) -> Hold:
        """How much of the task's forward work waits for this gate now."""
        return Hold.NONE

    def due(self, task: Task, now: float) -> float | None:
        """The earliest a dispatch may be due, or None when the gate has no say."""
        return None

    def expired(self, task: Task, now: float) -> str | None:
        """Why the task must roll back now (past its time), or None."""
        return None

    def holds_run(self, task: Task, run: Run, now: float) -> WaitCondition | None:
        """What an unclaimed run waits for when this gate keeps it from its claim now (shown as
        the task's `WaitingFor`, never stored), or None."""
        return None

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        """In place: a new normal run waits for this gate instead of being published."""
        return False

    # --- its lifecycle -----------------------------------------------------------------------------

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        """In place, at the task's creation: record what the submission asks of this gate (`ask`,
        None when it asks nothing); `starts`: the earliest the task may start, as the gates before
        this one say. Nothing waits yet, unless the ask can be kept nowhere but in the wait itself
        (a freeze window's): such a gate comes first."""
        return None

    def open(self, task: Task, now: float) -> bool:
        """In place, in the registry's order once the gates before it let the task go: begin the
        wait the task asked for, if any. True: the task waits for this gate now (the gates after
        it wait their turn)."""
        return False

    def release(self, task: Task, unit: Unit, now: float) -> None:
        """In place: `unit` settled, or left before it ran: give back what it holds of this gate."""
        return None

    def on_task_end(self, task: Task, now: float) -> None:
        """In place, from the task's final change: what it owes because of this gate."""
        return None

    def on_retry(self, task: Task, now: float) -> None:
        """In place, from an operator's retry (a new generation, every step waiting again)."""
        return None

    def child_ask(self, body: dict[str, Any]) -> Any:
        """What a sub-flow's child asks of this gate, from its parent's start entry (`body`: its
        type's template of this gate, the child's parameters and secrets), or None: handed to
        the child's `create_task` as this gate's `asks`."""
        return None

    def move_doubt(self, task: Task, ask: Any) -> str | None:
        """Why moving the task to a revision of its type that asks `ask` of this gate is in doubt
        (an operator's migrate), or None."""
        return None

    def start_entries(self, task: Task) -> set[str]:
        """The dispatch ids of its outbox entries that carry a not-started task's delayed start (in
        a document written before `StartAt` was kept)."""
        return set()

    def plan_reads(self, task: Task) -> dict[str, list[str]]:
        """What a dry run's plan shows of the gates' own tables for this task: the keys it would
        ask for, by the gate whose folder keeps the table (common/store/gates/<gate>)."""
        return {}

    def describe_wait(self, task: Task, wait: WaitCondition) -> str:
        """What its wait names, as a person reads it ("cluster:a (mode backup)")."""
        return wait.Key or wait.TaskId or ""


class TaskWaitGate(Gate):
    """A gate whose wait is the task's own `WaitingFor` (its lock, its rate, another task's end):
    while the task waits there, nothing of it moves until the gate opens."""

    def holds(self, task: Task) -> Hold:
        waiting = task.WaitingFor is not None and task.WaitingFor.Kind is self.wait_kind
        return Hold.ALL if waiting else Hold.NONE
