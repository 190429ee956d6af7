"""What the lock gates say of a task in `baton get`'s summary (common.engine.core.gate_text): its
lock, once no longer waited for (held, kept, released); how a plan says a start it holds; and
what a run waiting for its step's lock waits for (common.engine.core.wait_words)."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.states import RunState
from common.engine.gates.lock.task_lock import asked, described


def task_lines(task: Task) -> list[str]:
    if task.Lock is None or task.Lock.State == "waiting":  # a wait is the waiting line's
        return []
    note = "  (held until an operator ends the task)" if task.Lock.State == "kept" else ""
    return [f"lock {task.Lock.Key} ({described(asked(task.Lock))}): {task.Lock.State}{note}"]


TASK_LINES = task_lines
# How a dry run's plan says its start when the lock holds it first (its `when`, its words).
PLAN_START = ("lock", "once its lock is free")


def RUN_WAIT(task, run) -> str | None:  # type: ignore[no-untyped-def]  # noqa: N802 (a declaration)
    if run.State is not RunState.WAITING_LOCK:
        return None
    lock = task.Steps[run.Cursor].Lock
    return "waiting for the step's lock" + (f" (mode {lock.Mode})" if lock is not None and lock.Mode else "")
