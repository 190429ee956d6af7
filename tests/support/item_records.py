"""A for_each step over item records on real stores, as the tests of the item relay drive it
(docs/design/item-records.md): the relay applying its own entries as a committing process's
flusher does, and a task whose step opened, its records inserted by that relay."""

from __future__ import annotations

import time

from common.engine.core.entries import Timing, create_task
from common.engine.document import Task
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.kinds.for_each.records import ITEM_KINDS, keeps_records
from common.engine.kinds.for_each.waves.fields import WaveSpecDoc
from common.relay.items import ItemRelay
from tests.support.builders import make_step


def timing() -> Timing:
    return Timing(time.time(), lease=30)


def relay(tasks, items, sent: set[str] | None = None) -> ItemRelay:
    """A relay that applies the item entries a task change of its own adds, as the committing
    process's flusher does, each once (`sent`: the entries already marked sent)."""
    made: ItemRelay
    sent = set() if sent is None else sent

    def flush(task: Task) -> None:
        for entry in task.Outbox:
            if entry.Kind in ITEM_KINDS and entry.DispatchId not in sent:
                sent.add(entry.DispatchId)
                made.apply(task.TaskId, entry)

    made = ItemRelay(tasks, items, timing, flush, lambda record: None)
    return made


def opened(tasks, items, count: int, parallel: int, tolerate: Tolerance | None = None,
           on_failure: str | None = None, waves: list[WaveSpecDoc] | None = None) -> Task:
    """A task whose for_each step over `count` hosts (at most `parallel` at once) opened over
    records, its records inserted by the relay. `tolerate`: its failure budget; `on_failure`:
    "hold" to hold the task on an item's failure (left out: it rolls back); `waves`: the waves
    its items go in."""
    step = make_step("each")
    step.ForEach, step.MaxParallel, step.After, step.Tolerate = "hosts", parallel, [], tolerate
    if waves is not None:
        step.Waves = waves
    if on_failure is not None:
        step.OnFailure = on_failure
    task = create_task(task_type="t", steps=[step], parameters={"hosts": [f"h{i}" for i in range(count)]},
                       timing=timing())
    assert keeps_records(task.Steps[0])
    tasks.insert(task)
    (entry,) = task.Outbox
    relay(tasks, items).apply(task.TaskId, entry)
    return task
