"""The change of a task whose freeze window ended (docs/design/operations.md), pure like
common.engine.core.entries: the sweeper applies it at the window's end."""

from __future__ import annotations

from common.engine.core.advance import advance
from common.engine.document import Task
from common.engine.gates.freeze.window import thawed
from common.engine.registry import open_after
from common.engine.states import set_waiting
from common.engine.core.units import IdFactory, Refusal, Timing, new_id, record


def freeze_ended(task: Task, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """The task's freeze window ended (the sweeper, at `WaitingFor.RecheckAt`): the gates after
    this one open in turn (it waits next for the task it was created after, else asks for its
    deferred lock), else its ready roots dispatch."""
    if not thawed(task, timing.now):
        return Refusal("not waiting for a freeze window that has ended")
    new = task.clone()
    assert new.WaitingFor is not None
    record(new, timing.now, "freeze_ended", actor="oss", message=f"freeze window {new.WaitingFor.Key} ended")
    set_waiting(new, None)
    open_after(new, "freeze", timing.now)
    advance(new, timing, "oss", ids)
    return new
