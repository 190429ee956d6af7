"""How the CLI shows tasks to a person (the --json forms are the documents themselves)."""

from __future__ import annotations

import datetime as dt

from common.logging import mask_secrets
from common.models import HistoryEvent, Task


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def task_summary(task: Task) -> str:
    lines = [
        f"task {task.TaskId}  type {task.TaskType}  status {task.TaskStatus.value} "
        f"({task.TaskStatus.name})  cursor {task.TaskCursor}",
    ]
    if task.TaskMessage:
        lines.append(f"  message: {task.TaskMessage}")
    for index, step in enumerate(task.Steps):
        duration = f"{step.TimeEnd - step.TimeStart:.3f}s" if step.TimeEnd and step.TimeStart else "-"
        lines.append(
            f"  [{index}] {step.Name:<20} {step.State.value:<16} attempts {step.Attempts}"
            f"  {duration}{'  ' + step.Message if step.Message else ''}"
        )
    lines.append(f"  parameters: {mask_secrets(task.Parameters)}")
    return "\n".join(lines)


def event_line(task: Task, event: HistoryEvent) -> str:
    where = ""
    if event.Cursor is not None and event.Phase is not None:
        name = task.Steps[event.Cursor].Name
        where = f" step {event.Cursor} {name} ({event.Phase.label}, attempt {event.Attempt})"
    tail = f": {event.Message}" if event.Message else ""
    return f"{when(event.Time)} {event.Event}{where}{tail}"
