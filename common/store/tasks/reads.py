"""Reads of a task that many item runs of one step make (docs/design/item-records.md): its document
is parsed again only when its Version moved.

Each item's claim, outcome and notices read the task (its parameters, whether it still goes
forward), but the task is written only when a step over records opens, fails, settles or rolls
back. The document holds the step's list parameter, so a parse of it costs O(items): asking the
store for the Version alone and reusing the parsed task keeps an item's cost the same at 10,000
items as at 10. The task returned is shared: callers read it, never change it (a change goes
through common.store.tasks.mutate, which reads its own copy).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from common.engine.document import Task
from common.secrets.values import secret_values
from common.store.tasks.port import TaskStore

KEPT = 64  # tasks kept parsed: the fan-outs a process serves at once


class TaskReads:
    def __init__(self, store: TaskStore, kept: int = KEPT):
        self._store = store
        self._kept = kept
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()
        self._versioned = callable(getattr(store, "version_of", None))  # a store wrapper may lack it
        self._secrets: OrderedDict[tuple[str, int], list[str]] = OrderedDict()

    def secrets(self, task: Task) -> list[str]:
        """secret_values(task), worked out once per version of the task: it walks every
        parameter, the step's whole list among them, and each item's run asks for it."""
        key = (task.TaskId, task.Version)
        with self._lock:
            known = self._secrets.get(key)
        if known is not None:
            return known
        values = secret_values(task)
        with self._lock:
            self._secrets[key] = values
            while len(self._secrets) > self._kept:
                self._secrets.popitem(last=False)
        return values

    def get(self, task_id: str) -> Task | None:
        if not self._versioned:
            return self._store.get(task_id)
        version = self._store.version_of(task_id)
        if version is None:
            return None
        with self._lock:
            known = self._tasks.get(task_id)
            if known is not None and known.Version == version:
                self._tasks.move_to_end(task_id)
                return known
        task = self._store.get(task_id)
        if task is not None:
            with self._lock:
                self._tasks[task_id] = task
                self._tasks.move_to_end(task_id)
                while len(self._tasks) > self._kept:
                    self._tasks.popitem(last=False)
        return task
