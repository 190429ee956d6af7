"""A freeze window as a gate (DESIGN.md sec. 10): a task created while a window of policy `wait`
was open for its type starts nothing before the window ends.

The task carries `WaitingFor = {Kind: freeze, Key: <window>, Since, Until, RecheckAt: Until}`;
`SweepAt` includes `RecheckAt`, so the sweeper lets the task go at the window's end
(common.engine.gates.wait_transitions.freeze_ended). Whether a window is open is decided at
submission (common/flows/freeze.py): the document holds all the gate needs.
"""

from __future__ import annotations

from datetime import UTC, datetime

from common.engine.codes import WaitKind
from common.engine.document import Task, WaitCondition
from common.engine.gates.gate import Hold, OpenGate
from common.engine.states import TaskStatus

WAIT_FREEZE = WaitKind.FREEZE


def waiting_for_freeze(window: str, until: float, now: float) -> WaitCondition:
    return WaitCondition(Kind=WAIT_FREEZE, Key=window, Since=now, Until=until, RecheckAt=until)


def utc_text(moment: float) -> str:
    """A window's end as people read it, in UTC to the second: "2026-11-30T10:00:00Z"."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def freeze_message(window: str, until: float) -> str:
    return f"waiting for freeze window {window} to end at {utc_text(until)}"


def frozen(task: Task) -> bool:
    wait = task.WaitingFor
    return wait is not None and wait.Kind is WAIT_FREEZE and task.TaskStatus is TaskStatus.NOT_STARTED


def thawed(task: Task, now: float) -> bool:
    """The task's freeze window has ended: the sweeper may let it go."""
    return frozen(task) and task.WaitingFor is not None and (task.WaitingFor.Until or 0.0) <= now


class FreezeGate(OpenGate):
    name = "freeze"

    def holds(self, task: Task) -> Hold:
        return Hold.ALL if frozen(task) else Hold.NONE
