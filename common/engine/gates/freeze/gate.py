"""A freeze window as a gate (docs/design/operations.md): a task created while a window of policy
`wait` was open for its type starts nothing before the window ends.

The task carries `WaitingFor = {Kind: freeze, Key: <window>, Since, Until, RecheckAt: Until}`;
`SweepAt` includes `RecheckAt`, so the sweeper lets the task go at the window's end
(common.engine.gates.freeze.changes.freeze_ended). Whether a window is open is decided at
submission (common/flows/freeze.py): the document holds all the gate needs.
"""

from __future__ import annotations

from typing import Any

from common.engine.core.units import record
from common.engine.document import Task
from common.engine.gates.freeze.window import WAIT_FREEZE, freeze_message, frozen, waiting_for_freeze
from common.engine.gates.gate import Gate, Hold
from common.engine.states import set_waiting

class FreezeGate(Gate):
    """Its ask, (window name, the window's end), is kept nowhere but in its wait: it waits from the
    task's creation, first of the gates (the registry's order)."""

    name = "freeze"
    asks = "freeze"
    wait_kind = WAIT_FREEZE

    def holds(self, task: Task) -> Hold:
        return Hold.ALL if frozen(task) else Hold.NONE

    def due(self, task: Task, now: float) -> float | None:
        return task.WaitingFor.Until if frozen(task) and task.WaitingFor is not None else None

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        if ask is not None:  # nothing dispatches before the window ends
            window, until = ask
            set_waiting(task, waiting_for_freeze(window, until, now))
            record(task, now, "waiting_for_freeze", actor="oss", message=freeze_message(window, until))

    def open(self, task: Task, now: float) -> bool:
        return frozen(task)
