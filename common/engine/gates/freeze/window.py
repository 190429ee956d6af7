"""A task's wait for a freeze window's end, as the task document holds it: its `WaitingFor`
(`{Kind: freeze, Key: <window>, Since, Until, RecheckAt: Until}`), and its end as people read it."""

from __future__ import annotations

from datetime import UTC, datetime

from common.engine.codes import WaitKind
from common.engine.document import Task, WaitCondition
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
