"""A cancel while a wave's check runs (docs/design/waves.md, "Cancel while a check runs"): the
check is the step's running work then, and the cancel treats it as a running sub-flow's child:
cancelled with the parent's actor and reason, stopped at once with `stop_running`."""

from __future__ import annotations

from typing import Any

from common.engine.codes import OutboxKind
from common.engine.core.units import record
from common.engine.document import OutboxEntry, Task
from common.engine.kinds.for_each.waves.fields import CHECKING
from common.engine.kinds.for_each.waves.opening import where


def cancel_check(task: Task, cursor: int, actor: str, reason: str, now: float, stop_running: bool = False) -> None:
    """In place: the task turns backward (a cancel, its deadline) while the wave's check runs:
    the check's child is cancelled as a sub-flow's child is (docs/design/waves.md, "Cancel while a
    check runs"), its running check stopped too with `stop_running`. Once: the entry's id names it."""
    wave = task.Steps[cursor].Wave
    if wave is None or wave.Phase != CHECKING or wave.Check is None:
        return
    entry = f"{wave.Check}:cancel"
    if any(e.DispatchId == entry for e in task.Outbox) or any(
            e.Event == "wave_check_cancelled" and e.Cursor == cursor for e in task.History):
        return
    body: dict[str, Any] = {"TaskId": wave.Check, "ParentTaskId": task.TaskId, "Actor": actor, "Reason": reason}
    if stop_running:
        body["StopRunning"] = True
    task.Outbox.append(OutboxEntry(DispatchId=entry, Kind=OutboxKind.CANCEL_CHILD, Body=body, DueAt=now))
    record(task, now, "wave_check_cancelled", actor=actor, unit=(cursor, None),
           message=f"{where(task.Steps[cursor])}: its check (task {wave.Check}) is cancelled"
                   + (" and stopped" if stop_running else "") + f": {reason}")
