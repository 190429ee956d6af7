"""How the CLI shows tasks to a person (the --json forms are the documents themselves)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from common.engine.views import gate_lines, gate_notes, shown_wait, utc_text
from common.secrets.documents import mask_secrets
from common.engine.document import HistoryEvent, Run, Step, Task
from common.engine.states import FINAL_STATUSES, StepState, TaskStatus
from common.engine.registry import gate_of_wait, kind_of
from oss.cli.render_doc import when

__all__ = ["branches_line", "event_line", "items_lines", "task_summary", "waiting_line", "when"]


def task_summary(task: Task, item_counts: dict[int, dict[str, int]] | None = None) -> str:
    """`item_counts`: each started for_each step's items by state
    (oss.services.item_views.item_counts)."""
    lines = [
        f"task {task.TaskId}  type {task.TaskType}  status {task.TaskStatus.value} "
        f"({task.TaskStatus.name})  cursor {task.TaskCursor}",
    ]
    if task.TaskMessage:
        lines.append(f"  message: {task.TaskMessage}")
    if task.Held is not None:  # on_failure: hold (docs/fan-out.md, "Hold and redrive")
        item = "" if task.Held.Item is None else f" --item {task.Held.Item}"
        lines.append(f"  held since {when(task.Held.Time)}: baton redrive {task.TaskId} | baton rollback {task.TaskId}"
                     f" | baton skip {task.TaskId} --step {task.Held.Cursor}{item} (each --reason ...)")
    if task.FlowHash is not None:
        label = f"{task.FlowVersion} ({task.FlowHash})" if task.FlowVersion else task.FlowHash
        lines.append(f"  flow version: {label}")
    if waiting := waiting_line(task):
        lines.append(waiting)
    lines += [f"  {line}" for line in gate_lines(task)]  # its lock, a start slot taken
    for index, step in enumerate(task.Steps):
        duration = f"{step.TimeEnd - step.TimeStart:.3f}s" if step.TimeEnd and step.TimeStart else "-"
        lines.append(
            f"  [{index}] {step.Name:<20} {_state(step):<16} attempts {step.Attempts}"
            f"  {duration}{_graph_note(task, index, (item_counts or {}).get(index))}"
            f"{'  ' + step.Message if step.Message else ''}{gate_notes(task, index)}"
        )
        lines += _progress_lines(step)
        if step.Wave is not None and step.Wave.Phase == "paused":  # docs/fan-out.md, "Waves"
            lines.append(f"      waits for continue: baton continue {task.TaskId} {step.Name} --reason ...")
    lines.append(f"  parameters: {mask_secrets(task.Parameters)}")
    return "\n".join(lines)


def _state(step: Step) -> str:
    """Its state as its kind reads it (an approval step rejected: `rejected`), else the stored one."""
    return kind_of(step).shown_state(step) or step.State.value


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
    the drain a held run waits for, or a parked step (a masked task's `WaitingFor` counts its items' runs too)."""
    wait = shown_wait(task)
    if wait is None:
        return ""
    gate = gate_of_wait(wait.Kind)  # the gate it waits for names what it waits for
    what = gate.describe_wait(task, wait) if gate is not None else wait.Key or wait.TaskId or ""
    until = f" until {utc_text(wait.Until)}" if wait.Until is not None else ""
    return f"  waiting for {wait.Kind}{' ' + what if what else ''}{until} since {when(wait.Since)}"


def held_note(task: Task) -> str:
    """For a task as shown (masked): "held (waiting for drain mysql)  " when nothing of it runs
    because a gate holds it (its steps shown `waiting`: a delayed start, a drained module, a
    freeze window, another task, its lock), else ""."""
    if task.TaskStatus not in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) or task.WaitingFor is None:
        return ""
    if any(step.State is StepState.RUNNING for step in task.Steps):
        return ""
    return f"held ({waiting_line(task).strip().split(' since ')[0]})  "


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
    """What a line-shaped summary would not show: whom the step waits for, its items, its child
    (as its kind describes it: common.engine.registry.kind_of(step).describe)."""
    step = task.Steps[index]
    shown = kind_of(step).describe(step, counts)
    notes = []
    if step.After is not None and step.After != ([index - 1] if index else []):
        notes.append("after " + (", ".join(task.Steps[i].Name for i in step.After) or "nothing"))
    if shown.items is not None:  # every state with items: "items 20: 12 succeeded, 4 running, 4 waiting"
        final = task.TaskStatus in FINAL_STATUSES
        notes.append(f"items {shown.total}: " + (", ".join(f"{n} {item_state(state, final)}"
                                                          for state, n in shown.items.items()) or "none yet"))
    elif shown.done is not None:
        notes.append(f"items {shown.done}/{shown.total} succeeded")
    if shown.wave:
        notes.append(shown.wave)
    if shown.child:
        notes.append(f"child {shown.child}")
    if shown.children:  # a for_each sub-flow step: a child task per item
        children = shown.children
        listed = ", ".join(children) if len(children) <= 3 else f"{children[0]} ... {children[-1]}"
        notes.append(f"child tasks {listed} ({len(children)})")
    return "  (" + "; ".join(notes) + ")" if notes else ""


def _progress_lines(step: Step) -> list[str]:
    """Check again later: each unit whose command answered "not done yet", with its progress."""
    units = list(enumerate(step.Items)) if step.Items else [(None, step)]
    return [
        f"      {'' if item is None else f'item {item}: '}not done yet, waiting since {when(unit.WaitingSince)}"
        f"{': ' + unit.Progress if unit.Progress else ''}"
        for item, unit in units if unit.WaitingSince is not None
    ]


def item_state(state: str, final: bool) -> str:
    """An item's state as a person reads it: a finished task's items still `waiting` never ran."""
    return "never started" if final and state == "waiting" else state


def items_lines(page: dict, final: bool = False) -> str:
    """A page of a step's items (oss.services.item_views.item_page), one line each, and how to go
    on. `final`: the task ended (an item still waiting never started)."""
    head = (f"task {page['TaskId']}  step {page['Step']} {page['Name']}: {page['ItemCount']} items, "
            f"{len(page['Items'])} shown")
    lines = [head]
    for item in page["Items"]:
        value = json.dumps(item["Value"], ensure_ascii=False)
        value = value if len(value) <= 40 else value[:37] + "..."
        rollback = f"  rollback {item['RollbackMessage']}" if item.get("RollbackMessage") else ""
        lines.append(f"  [{item['Item']}] {item_state(item['State'], final):<16} attempts {item['Attempts']}  {value}"
                     f"{'  ' + item['Message'] if item['Message'] else ''}{rollback}")
    if page["NextAfter"] is not None:
        lines.append(f"(more: --after {page['NextAfter']})")
    return "\n".join(lines)
