"""A stored task document that cannot be read back must not stop anything else.

Documents written before the input limits (common.input_limits), edited by hand, or written by a
newer baton with a field this one does not know can fail to parse. Every store reader then:

- `get` raises UnreadableTask (a module dead-letters the step with an alarm naming the task; the
  API answers 409 naming it), never a bare exception;
- the sweeper's queries skip it, and the store MARKS it so those queries stop returning it (no
  loop, no starving the healthy tasks behind it). The mark changes no field of the document: the
  SQLite store clears the row's derived index columns, the Mongo store adds `Unreadable`; the next
  write of the document by baton removes the mark. A document that fails only on fields this
  version does not know is not marked: a newer baton wrote it (a rolling upgrade) and sweeps it;
- the listing shows a minimal entry (id, type, creation time, status, why) instead of failing
  the whole page;
- one alarm per task (its AlarmId is derived from the TaskId, so stores ignore a repeat) and one
  error log line when that alarm is first stored.

The reason names the failing field and the problem, never the document's values (secrets).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from common.engine.codes import AlarmKind
from common.input_limits import printable
from common.engine.document import Alarm, Task
from common.engine.states import TaskStatus

KIND = AlarmKind.UNREADABLE_TASK
MARK_FIELD = "Unreadable"  # Mongo: the mark on a document; stripped before parsing


def reason(exc: BaseException) -> str:
    """Why a document failed to parse, without quoting any of it."""
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        return printable(f"{where}: {first['msg']}")[:300]
    return type(exc).__name__


def should_mark(exc: BaseException) -> bool:
    """Mark it out of the sweeper's sight, unless only unknown fields stop it: then a newer baton
    (a rolling upgrade) wrote it and can handle it, so this process just skips it each time."""
    if isinstance(exc, ValidationError):
        return any(error["type"] != "extra_forbidden" for error in exc.errors(include_input=False))
    return True


def alarm(task_id: str, why: str, now: float) -> Alarm:
    return Alarm(
        AlarmId=f"unreadable-{task_id}", Kind=KIND, Time=now, TaskId=task_id,
        Message=f"the stored document of task {task_id} cannot be read ({why}); it is skipped "
                "by the sweeper and shown as unreadable until it is repaired",
    )  # fmt: skip


def placeholder(task_id: str, task_type: str, time_create: float, status: Any, why: str) -> Task:
    """The listing's entry for an unreadable task: what the indexed fields say, and why."""
    try:
        code = TaskStatus(int(status))
    except (TypeError, ValueError):
        code = TaskStatus.NOT_STARTED
    return Task(
        TaskId=printable(str(task_id)), TaskType=printable(str(task_type)),
        TimeCreate=float(time_create) if isinstance(time_create, (int, float)) else 0.0,
        TaskStatus=code, TaskMessage=f"unreadable: {why}", Steps=[],
    )  # fmt: skip


def is_placeholder(task: Task) -> bool:
    """A listing's stand-in for an unreadable document (a real task has at least one step)."""
    return not task.Steps


def report(add_alarm: Any, task_id: str, why: str, now: float) -> None:
    """Store the task's alarm; log once, when this is the first time anyone stored it."""
    import structlog  # here, not at the top: every store reader imports this module, few ever log

    log = structlog.get_logger(__name__)
    try:
        first = add_alarm(alarm(task_id, why, now))
    except Exception as exc:  # the store is failing too: the log line is all we can do
        log.error("unreadable task; could not store its alarm", task_id=task_id, reason=why, error=type(exc).__name__)
        return
    if first:
        log.error("unreadable task document: skipped and alarmed", task_id=task_id, reason=why)
