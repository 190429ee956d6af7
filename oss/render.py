"""How the CLI shows tasks to a person (the --json forms are the documents themselves)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable

from common.engine.gates.lock_modes import EXCLUSIVE
from common.engine.gates.task_lock import asked, described
from common.logging import mask_secrets
from common.engine.document import HistoryEvent, Run, Step, Task
from common.engine.gates.freeze import utc_text
from common.engine.gates.drain import drain_wait


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def task_summary(task: Task, item_counts: dict[int, dict[str, int]] | None = None) -> str:
    """`item_counts`: each started for_each step's items by state (oss.item_views.item_counts)."""
    lines = [
        f"task {task.TaskId}  type {task.TaskType}  status {task.TaskStatus.value} "
        f"({task.TaskStatus.name})  cursor {task.TaskCursor}",
    ]
    if task.TaskMessage:
        lines.append(f"  message: {task.TaskMessage}")
    if task.FlowHash is not None:
        label = f"{task.FlowVersion} ({task.FlowHash})" if task.FlowVersion else task.FlowHash
        lines.append(f"  flow version: {label}")
    if waiting := waiting_line(task):
        lines.append(waiting)
    if task.Lock is not None and task.Lock.State != "waiting":
        note = "  (held until an operator ends the task)" if task.Lock.State == "kept" else ""
        lines.append(f"  lock {task.Lock.Key} ({described(asked(task.Lock))}): {task.Lock.State}{note}")
    for index, step in enumerate(task.Steps):
        duration = f"{step.TimeEnd - step.TimeStart:.3f}s" if step.TimeEnd and step.TimeStart else "-"
        lines.append(
            f"  [{index}] {step.Name:<20} {step.State.value:<16} attempts {step.Attempts}"
            f"  {duration}{_graph_note(task, index, (item_counts or {}).get(index))}"
            f"{'  ' + step.Message if step.Message else ''}"
        )
        lines += _progress_lines(step)
    lines.append(f"  parameters: {mask_secrets(task.Parameters)}")
    return "\n".join(lines)


def event_line(task: Task, event: HistoryEvent) -> str:
    where = ""
    item = "" if event.Item is None else f" item {event.Item}"
    if event.Cursor is not None and event.Phase is not None:
        name = task.Steps[event.Cursor].Name
        where = f" step {event.Cursor} {name}{item} ({event.Phase.label}, attempt {event.Attempt})"
    elif event.Cursor is not None:
        where = f" step {event.Cursor} {task.Steps[event.Cursor].Name}{item}"
    tail = f": {event.Message}" if event.Message else ""
    return f"{when(event.Time)} {event.Event}{where}{tail}"


def waiting_line(task: Task) -> str:
    """What the task waits for ("  waiting for drain mysql since ..."), or "": its own wait, else
    the drain a held run waits for (a masked task's `WaitingFor` counts its items' runs too)."""
    wait = drain_wait(task)
    if wait is None:
        return ""
    what = wait.TaskId if wait.Kind == "task" else wait.Key
    if wait.Kind == "lock" and task.Lock is not None and task.Lock.Mode != EXCLUSIVE:
        what += f" (mode {task.Lock.Mode})"
    until = f" until {utc_text(wait.Until)}" if wait.Until is not None else ""
    return f"  waiting for {wait.Kind} {what}{until} since {when(wait.Since)}"


def branches_line(task: Task, item_runs: Iterable[Run] = ()) -> str:
    """The runs in flight, one per branch: "in flight: b (running), each[0, 2] (pending)".
    `item_runs`: the runs of its items kept in records, as a reader found them."""
    runs = [*task.Runs, *item_runs]
    if not runs:
        return ""
    grouped: dict[tuple[int, str], list[int]] = {}
    for run in runs:
        phase = "" if run.Phase.label == "normal" else " rollback"
        key = (run.Cursor, f"{run.State.value}{phase}")
        grouped.setdefault(key, []).extend([] if run.Item is None else [run.Item])
    parts = []
    for (cursor, state), items in sorted(grouped.items()):
        name = task.Steps[cursor].Name + (f"[{', '.join(map(str, sorted(items)))}]" if items else "")
        parts.append(f"{name} ({state})")
    return "  in flight: " + ", ".join(parts)


def _graph_note(task: Task, index: int, counts: dict[str, int] | None = None) -> str:
    """What a line-shaped summary would not show: whom the step waits for, its items, its child."""
    step = task.Steps[index]
    notes = []
    if step.After is not None and step.After != ([index - 1] if index else []):
        notes.append("after " + (", ".join(task.Steps[i].Name for i in step.After) or "nothing"))
    if counts is not None:  # every state with items: "items 20: 12 succeeded, 4 running, 4 waiting"
        total = step.ItemCount if step.Items is None else len(step.Items)
        notes.append(f"items {total}: " + (", ".join(f"{n} {state}" for state, n in counts.items()) or "none yet"))
    elif step.Items is not None:
        done = sum(1 for item in step.Items if item.State.value == "succeeded")
        notes.append(f"items {done}/{len(step.Items)} succeeded")
    if step.ChildTaskId:
        notes.append(f"child {step.ChildTaskId}")
    children = [item.ChildTaskId for item in step.Items or [] if item.ChildTaskId]
    if children:  # a for_each sub-flow step: a child task per item
        shown = ", ".join(children) if len(children) <= 3 else f"{children[0]} ... {children[-1]}"
        notes.append(f"child tasks {shown} ({len(children)})")
    return "  (" + "; ".join(notes) + ")" if notes else ""


def _progress_lines(step: Step) -> list[str]:
    """Check again later: each unit whose command answered "not done yet", with its progress."""
    units = list(enumerate(step.Items)) if step.Items else [(None, step)]
    return [
        f"      {'' if item is None else f'item {item}: '}not done yet, waiting since {when(unit.WaitingSince)}"
        f"{': ' + unit.Progress if unit.Progress else ''}"
        for item, unit in units if unit.WaitingSince is not None
    ]


def items_lines(page: dict) -> str:
    """A page of a step's items (oss.item_views.item_page), one line each, and how to go on."""
    head = (f"task {page['TaskId']}  step {page['Step']} {page['Name']}: {page['ItemCount']} items, "
            f"{len(page['Items'])} shown")
    lines = [head]
    for item in page["Items"]:
        value = json.dumps(item["Value"], ensure_ascii=False)
        value = value if len(value) <= 40 else value[:37] + "..."
        rollback = f"  rollback {item['RollbackMessage']}" if item.get("RollbackMessage") else ""
        lines.append(f"  [{item['Item']}] {item['State']:<16} attempts {item['Attempts']}  {value}"
                     f"{'  ' + item['Message'] if item['Message'] else ''}{rollback}")
    if page["NextAfter"] is not None:
        lines.append(f"(more: --after {page['NextAfter']})")
    return "\n".join(lines)
